/**
 * The in-place upgrade of a layout-1 store to layout 2 (migration 002), run in the migration's transaction: a
 * SIGKILL at any moment leaves either the old store or the new one.
 *
 * Layout 1 kept values in `kv (key, version, value)` and every operation of a version as a row of `log_N` (leaves
 * carried their hash; branches named their leaf children by (version, 2^31 + the operation's place)). Layout 2 keeps
 * one `leaves` row per key changed per version and the operations packed per version; branch rows stay, their leaf
 * children renamed to (version, 2^31 + leaves id).
 * @module
 */
import { digestBytes, leafHash, sha256 } from "../base/hash.js";
import { sql, type Connection } from "./connection.js";
import { metaNumber, setMeta } from "./meta.js";
import { leafSeq, LEAF_BASE } from "./shards.js";
import { StoreReader } from "./store-reader.js";
import { insertLeaf, insertOps } from "./store-writer.js";
import { packOps, type PackedOp } from "./version-ops.js";

/** Layout 1's operation kinds. */
const DELETE = 0;
const LEAF = 1;

/** Converts the rows of a layout-1 store (the tables of migration 002 exist and are empty). */
export function upgradeLayout1(db: Connection): void {
  const tables = sql(db, "SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
  const logTables = tables.filter((t) => /^log_c?\d+$/.test(t));
  const branchTables = tables.filter((t) => /^branch_c?\d+$/.test(t));
  // Replays of the oldest kept version start after its base: only later versions need their operations, and rows
  // at or before it were pruned by layout 1's rule already.
  const prunedTo = metaNumber(db, "pruned_to");
  const base = prunedTo === undefined ? undefined : new StoreReader(db).replayBase(prunedTo + 1);
  const prunedThrough = base?.version ?? (metaNumber(db, "first_version") ?? 1) - 1;
  db.exec("CREATE TEMP TABLE upgrade_leaf_ids (version INTEGER NOT NULL, seq INTEGER NOT NULL, id INTEGER NOT NULL, PRIMARY KEY (version, seq)) WITHOUT ROWID");
  const mapId = sql(db, "INSERT INTO upgrade_leaf_ids (version, seq, id) VALUES (?, ?, ?)");
  const kvValue = sql(db, "SELECT value FROM kv WHERE key = ? AND version = ?").raw();
  let nextId = 1;

  for (const table of logTables) {
    const versions = db.prepare(`SELECT DISTINCT version FROM ${table} ORDER BY version`).pluck().all() as number[];
    const rowsOf = db.prepare(`SELECT seq, key, kind, hash FROM ${table} WHERE version = ? ORDER BY seq`).raw();
    for (const v of versions) {
      const log = rowsOf.all(v) as Array<[number, Uint8Array, number, Uint8Array | null]>;
      const last = new Map<string, number>();
      log.forEach((r, i) => last.set(Buffer.from(r[1]).toString("latin1"), i));
      const first = nextId;
      const ops: PackedOp[] = [];
      log.forEach(([seq, key, kind, hash], i) => {
        const row = last.get(Buffer.from(key).toString("latin1")) === i;
        ops.push({ key, set: kind !== DELETE, row });
        if (!row) return;
        const id = nextId++;
        const kv = kvValue.get(key, v) as [Uint8Array | null] | undefined;
        if (kind === LEAF) {
          // A leaf whose value no kept version reads keeps only its hash: an old tree still names it.
          insertLeaf(db, v, { id, key, hash, value: kv?.[0] ?? null });
          mapId.run(v, seq, id);
        } else insertLeaf(db, v, { id, key, hash: null, value: null });
      });
      if (v > prunedThrough) insertOps(db, v, first, packOps(ops));
    }
  }

  // A version that changed nothing has no log rows but is replayed all the same.
  const latest = (sql(db, "SELECT max(version) FROM versions").pluck().get() as number | null) ?? 0;
  for (let v = prunedThrough + 1; v <= latest; v++) {
    if (sql(db, "SELECT 1 FROM version_ops WHERE version = ?").get(v) === undefined) insertOps(db, v, nextId, packOps([]));
  }

  // Value rows no log row named (none in a store layout 1 kept whole; written for safety with their hashes).
  const orphans = sql(db, "SELECT key, version, value FROM kv AS k WHERE NOT EXISTS (SELECT 1 FROM leaves AS l WHERE l.key = k.key AND l.version = k.version) ORDER BY version, key")
    .raw()
    .all() as Array<[Uint8Array, number, Uint8Array | null]>;
  for (const [key, version, value] of orphans) {
    insertLeaf(db, version, { id: nextId++, key, hash: value === null ? null : digestBytes(leafHash(key, sha256(value), version)), value });
  }

  // Branches name their leaf children by the new ids.
  for (const t of branchTables) {
    for (const side of ["left", "right"]) {
      db.prepare(
        `UPDATE ${t} SET ${side}_seq = coalesce((SELECT ${LEAF_BASE} + m.id FROM upgrade_leaf_ids AS m WHERE m.version = ${t}.${side}_version AND m.seq = ${t}.${side}_seq), ${side}_seq) WHERE ${side}_seq >= ${LEAF_BASE}`,
      ).run();
    }
  }
  // So do roots that are leaves (trees of one key).
  const newSeq = (version: number, seq: number): number => {
    const id = sql(db, "SELECT id FROM upgrade_leaf_ids WHERE version = ? AND seq = ?").pluck().get(version, seq) as number | undefined;
    return id === undefined ? seq : leafSeq(id);
  };
  for (const [version, seq] of sql(db, `SELECT root_version, root_seq FROM versions WHERE root_seq >= ${LEAF_BASE}`).raw().all() as Array<[number, number]>) {
    sql(db, "UPDATE versions SET root_seq = ? WHERE root_version = ? AND root_seq = ?").run(newSeq(version, seq), version, seq);
  }
  const baseVersion = metaNumber(db, "base_root_version");
  const baseSeq = metaNumber(db, "base_root_seq");
  if (baseVersion !== undefined && baseSeq !== undefined && baseSeq >= LEAF_BASE) setMeta(db, "base_root_seq", newSeq(baseVersion, baseSeq));

  setMeta(db, "leaves_pruned_to", prunedThrough);
  db.exec("DROP TABLE upgrade_leaf_ids; DROP TABLE kv;");
  for (const t of logTables) db.exec(`DROP TABLE ${t}`);
}
