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
import { latin1 } from "../base/bytes.js";
import { digestBytes, leafHash, sha256 } from "../base/hash.js";
import { sql, type Connection } from "./connection.js";
import { metaNumber, setMeta } from "./meta.js";
import { leafSeq, LEAF_BASE } from "./shards.js";
import { StoreReader } from "./store-reader.js";
import { insertLeaf, insertOps } from "./store-writer.js";
import { packOps } from "./version-ops.js";

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

  const compactThrough = metaNumber(db, "compact_through") ?? -1;
  const existedBefore = sql(db, "SELECT value IS NOT NULL FROM kv WHERE key = ? AND version < ? ORDER BY version DESC LIMIT 1").pluck();
  const setRows = sql(db, "UPDATE versions SET first_leaf = ?, leaf_rows = ? WHERE version = ?");
  // Versions in ascending order, whatever table holds their log.
  const homes: Array<[version: number, table: string]> = [];
  for (const table of logTables) {
    for (const v of db.prepare(`SELECT DISTINCT version FROM ${table}`).pluck().all() as number[]) homes.push([v, table]);
  }
  homes.sort((a, b) => a[0] - b[0]);
  const latest = (sql(db, "SELECT max(version) FROM versions").pluck().get() as number | null) ?? 0;
  const withLog = new Set<number>();
  for (const [v, table] of homes) {
    withLog.add(v);
    const log = db.prepare(`SELECT seq, key, kind, hash FROM ${table} WHERE version = ? ORDER BY seq`).raw().all(v) as Array<
      [number, Uint8Array, number, Uint8Array | null]
    >;
    const ids = log.map((r) => Buffer.from(r[1]).toString("latin1"));
    const last = new Map<string, number>();
    ids.forEach((id, i) => last.set(id, i));
    // One row per key the version changed: a set, or the removal of a key that was there before (a key created and
    // removed in the version is no change), in key order.
    const changed = log
      .map((r, i) => ({ r, i, id: ids[i]! }))
      .filter(({ r, i, id }) => last.get(id) === i && (r[2] !== DELETE || existedBefore.get(r[1], v) === 1));
    changed.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const first = nextId;
    const rowOf = new Map<number, number>();
    changed.forEach(({ r: [seq, key, kind, hash], i }, row) => {
      rowOf.set(i, row);
      const id = first + row;
      if (kind === LEAF) {
        // A leaf whose value no kept version reads keeps only its hash: an old tree still names it.
        const kv = kvValue.get(key, v) as [Uint8Array | null] | undefined;
        insertLeaf(db, v, { id, key, hash, value: kv?.[0] ?? null });
        mapId.run(v, seq, id);
      } else insertLeaf(db, v, { id, key, hash: null, value: null });
    });
    nextId += changed.length;
    if (v > prunedThrough) insertOps(db, v, first, packOps(log.map(([, key, kind], i) => ({ key, set: kind !== DELETE, row: rowOf.get(i) }))));
    // A compacted log holds only the leaves old trees kept, not the version's changes.
    if (v > compactThrough) setRows.run(first, changed.length, v);
  }
  // A version that changed nothing has no log rows but is replayed (and read for its changes) all the same.
  for (let v = prunedThrough + 1; v <= latest; v++) {
    if (withLog.has(v)) continue;
    insertOps(db, v, nextId, packOps([]));
    setRows.run(nextId, 0, v);
  }

  // Value rows no log row named (none in a store layout 1 kept whole; written for safety with their hashes).
  const orphans = sql(db, "SELECT key, version, value FROM kv AS k WHERE NOT EXISTS (SELECT 1 FROM leaves AS l WHERE l.key = k.key AND l.version = k.version) ORDER BY version, key")
    .raw()
    .all() as Array<[Uint8Array, number, Uint8Array | null]>;
  for (const [key, version, value] of orphans) {
    insertLeaf(db, version, { id: nextId++, key, hash: value === null ? null : digestBytes(leafHash(latin1(key), sha256(value), version)), value });
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
