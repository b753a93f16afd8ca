/**
 * Migration 002's conversion: the in-place upgrade of a layout-1 store to layout 2, run by src/sqlite/migrate.ts in
 * the migration's transaction after migrations/002_layout2.sql, so that a SIGKILL at any moment leaves either the
 * old store or the new one.
 *
 * Layout 1 kept values in `kv (key, version, value)` and every operation of a version as a row of `log_N` (leaves
 * carried their hash; branches named their leaf children by (version, 2^31 + the operation's place)). Layout 2 keeps
 * one `leaves` row per key changed per version and the operations packed per version; branch rows stay, their leaf
 * children renamed to (version, 2^31 + leaves id).
 *
 * FROZEN ON PURPOSE. This module writes layout 2 exactly as it was when migration 002 was made, so it carries its own
 * SQL and its own copy of layout 2's encodings (the leaf node key, the packed operations, where replays start), and
 * must never import the live store code (store-reader, store-writer, version-ops, shards, meta, ...): a later change
 * there would silently change what this upgrade writes, and a later layout gets a migration of its own instead. It
 * may import only the connection type and src/base's hashing and bytes, which cosmos/iavl fixes;
 * test/upgrade.test.ts checks that.
 * @module
 */
import { latin1 } from "../../base/bytes.js";
import { digestBytes, leafHash, sha256 } from "../../base/hash.js";
import type { Connection } from "../connection.js";

/** Layout 1's operation kinds (the `kind` column of `log_N`). */
const DELETE = 0;
const LEAF = 1;

/** Layout 2's node keys: a sequence at or above this names the leaf in leaves row (sequence − LEAF_BASE). */
const LEAF_BASE = 2 ** 31;

/** One operation of a version, as layout 2 packs it. */
interface Op {
  key: Uint8Array;
  set: boolean;
  /** For the operation that made a leaves row, the row's place among the version's rows (in key order). */
  row: number | undefined;
}

/** Writes `n` as a uvarint (LEB128, as Go's `binary.PutUvarint`) at `pos`; returns the position after it. */
function putUvarint(buf: Uint8Array, pos: number, n: number): number {
  while (n >= 0x80) {
    buf[pos++] = (n % 0x80) | 0x80;
    n = Math.floor(n / 0x80);
  }
  buf[pos++] = n;
  return pos;
}

/**
 * Layout 2's `version_ops.ops`: per operation a flags byte (bit 0: a set, else a remove; bit 1: it made a leaves
 * row), the key's length as a uvarint, the key, and with bit 1 the row's place as a uvarint.
 */
function packOps(ops: readonly Op[]): Uint8Array {
  let n = 0;
  for (const op of ops) n += 1 + 5 + op.key.length + 8;
  const buf = new Uint8Array(n);
  let p = 0;
  for (const op of ops) {
    buf[p++] = (op.set ? 1 : 0) | (op.row !== undefined ? 2 : 0);
    p = putUvarint(buf, p, op.key.length);
    buf.set(op.key, p);
    p += op.key.length;
    if (op.row !== undefined) p = putUvarint(buf, p, op.row);
  }
  return buf.slice(0, p);
}

/** A meta value as a number; undefined when the row is missing or NULL. */
function metaNumber(db: Connection, name: string): number | undefined {
  const v = db.prepare("SELECT value FROM meta WHERE name = ?").pluck().get(name);
  return v === undefined || v === null ? undefined : Number(v);
}

/**
 * The version a replay to `version` starts from, as layout 2 reads it: the newest checkpoint at or before it, or,
 * once pruning removed that checkpoint's own row, the base the prune recorded. Undefined: from the first version.
 */
function replayBase(db: Connection, version: number): number | undefined {
  const cp = (db.prepare("SELECT max(version) FROM versions WHERE checkpoint = 1 AND version <= ?").pluck().get(version) as number | null) ?? undefined;
  const base = metaNumber(db, "base_version");
  // A snapshot kept by pruning may be older than the recorded base; the log before the base may be gone.
  if (base === undefined || base > version || (cp !== undefined && cp >= base)) return cp;
  return base;
}

/** Converts the rows of a layout-1 store (the tables of migration 002 exist and are empty). */
export function upgradeLayout1(db: Connection): void {
  const setMeta = db.prepare("INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)");
  const insertLeaf = db.prepare("INSERT INTO leaves (id, version, key, hash, value) VALUES (?, ?, ?, ?, ?)");
  const insertOps = db.prepare("INSERT INTO version_ops (version, first_leaf, ops) VALUES (?, ?, ?)");

  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
  const logTables = tables.filter((t) => /^log_c?\d+$/.test(t));
  const branchTables = tables.filter((t) => /^branch_c?\d+$/.test(t));
  // Replays of the oldest kept version start after its base: only later versions need their operations, and rows
  // at or before it were pruned by layout 1's rule already.
  const prunedTo = metaNumber(db, "pruned_to");
  const prunedThrough = (prunedTo === undefined ? undefined : replayBase(db, prunedTo + 1)) ?? (metaNumber(db, "first_version") ?? 1) - 1;
  db.exec("CREATE TEMP TABLE upgrade_leaf_ids (version INTEGER NOT NULL, seq INTEGER NOT NULL, id INTEGER NOT NULL, PRIMARY KEY (version, seq)) WITHOUT ROWID");
  const mapId = db.prepare("INSERT INTO upgrade_leaf_ids (version, seq, id) VALUES (?, ?, ?)");
  const kvValue = db.prepare("SELECT value FROM kv WHERE key = ? AND version = ?").raw();
  let nextId = 1;

  const compactThrough = metaNumber(db, "compact_through") ?? -1;
  const existedBefore = db.prepare("SELECT value IS NOT NULL FROM kv WHERE key = ? AND version < ? ORDER BY version DESC LIMIT 1").pluck();
  const setRows = db.prepare("UPDATE versions SET first_leaf = ?, leaf_rows = ? WHERE version = ?");
  // Versions in ascending order, whatever table holds their log.
  const homes: Array<[version: number, table: string]> = [];
  for (const table of logTables) {
    for (const v of db.prepare(`SELECT DISTINCT version FROM ${table}`).pluck().all() as number[]) homes.push([v, table]);
  }
  homes.sort((a, b) => a[0] - b[0]);
  const latest = (db.prepare("SELECT max(version) FROM versions").pluck().get() as number | null) ?? 0;
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
        insertLeaf.run(id, v, key, hash, kv?.[0] ?? null);
        mapId.run(v, seq, id);
      } else insertLeaf.run(id, v, key, null, null);
    });
    nextId += changed.length;
    if (v > prunedThrough) insertOps.run(v, first, packOps(log.map(([, key, kind], i) => ({ key, set: kind !== DELETE, row: rowOf.get(i) }))));
    // A compacted log holds only the leaves old trees kept, not the version's changes.
    if (v > compactThrough) setRows.run(first, changed.length, v);
  }
  // A version that changed nothing has no log rows but is replayed (and read for its changes) all the same.
  for (let v = prunedThrough + 1; v <= latest; v++) {
    if (withLog.has(v)) continue;
    insertOps.run(v, nextId, packOps([]));
    setRows.run(nextId, 0, v);
  }

  // Value rows no log row named (none in a store layout 1 kept whole; written for safety with their hashes).
  const orphans = db
    .prepare("SELECT key, version, value FROM kv AS k WHERE NOT EXISTS (SELECT 1 FROM leaves AS l WHERE l.key = k.key AND l.version = k.version) ORDER BY version, key")
    .raw()
    .all() as Array<[Uint8Array, number, Uint8Array | null]>;
  for (const [key, version, value] of orphans) {
    insertLeaf.run(nextId++, version, key, value === null ? null : digestBytes(leafHash(latin1(key), sha256(value), version)), value);
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
  const mappedId = db.prepare("SELECT id FROM upgrade_leaf_ids WHERE version = ? AND seq = ?").pluck();
  const newSeq = (version: number, seq: number): number => {
    const id = mappedId.get(version, seq) as number | undefined;
    return id === undefined ? seq : LEAF_BASE + id;
  };
  const setRoot = db.prepare("UPDATE versions SET root_seq = ? WHERE root_version = ? AND root_seq = ?");
  for (const [version, seq] of db.prepare(`SELECT root_version, root_seq FROM versions WHERE root_seq >= ${LEAF_BASE}`).raw().all() as Array<[number, number]>) {
    setRoot.run(newSeq(version, seq), version, seq);
  }
  const baseVersion = metaNumber(db, "base_root_version");
  const baseSeq = metaNumber(db, "base_root_seq");
  if (baseVersion !== undefined && baseSeq !== undefined && baseSeq >= LEAF_BASE) setMeta.run("base_root_seq", newSeq(baseVersion, baseSeq));

  setMeta.run("leaves_pruned_to", prunedThrough);
  db.exec("DROP TABLE upgrade_leaf_ids; DROP TABLE kv;");
  for (const t of logTables) db.exec(`DROP TABLE ${t}`);
}
