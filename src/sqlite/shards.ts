/**
 * The node tables: each shard holds the log (leaves and deletes) and branch rows of a range of versions, so that
 * pruning can drop a whole shard with one statement instead of deleting rows; compacted generations hold the rows
 * that outlived the shards a prune dropped (and the nodes of an import). Every node row is written here.
 * @module
 */
import { sql, type Connection } from "./connection.js";
import { OpKind, type BranchRow, type LeafRow, type LogRow } from "./rows.js";

/** Sequences at or above this are leaves and deletes (rows of the log); below it, branches (as IAVL v2). */
export const LEAF_BASE = 2 ** 31;

/** The log and branch tables of one shard or compacted generation. */
export interface NodeTables {
  log: string;
  branch: string;
}

/** The shard holding `version`, for shards of `shardSize` versions. */
export function shardOf(version: number, shardSize: number): number {
  return Math.floor(version / shardSize);
}

/** Table names of shard `id`. */
export function shardTables(id: number): NodeTables {
  return { log: `log_${id}`, branch: `branch_${id}` };
}

/** Table names of compaction generation `gen`: the survivors of pruned shards. */
export function compactedTables(gen: number): NodeTables {
  return { log: `log_c${gen}`, branch: `branch_c${gen}` };
}

/** Creates the tables of shard `id` (with its first and last version) when missing. */
export function createShard(db: Connection, id: number, shardSize: number): void {
  createNodeTables(db, shardTables(id));
  sql(db, "INSERT OR IGNORE INTO shards (id, first, last) VALUES (?, ?, ?)").run(id, id * shardSize, (id + 1) * shardSize - 1);
}

/** Creates a log and a branch table with the node schema. */
export function createNodeTables(db: Connection, t: NodeTables): void {
  // Rows are keyed (version, seq) and written in that order, which keeps inserts sequential and the WAL small.
  db.exec(`
    CREATE TABLE IF NOT EXISTS ${t.log} (
      version INTEGER NOT NULL, seq INTEGER NOT NULL, key BLOB NOT NULL, kind INTEGER NOT NULL, hash BLOB,
      PRIMARY KEY (version, seq)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS ${t.branch} (
      version INTEGER NOT NULL, seq INTEGER NOT NULL, key BLOB NOT NULL, height INTEGER NOT NULL,
      size INTEGER NOT NULL, hash BLOB NOT NULL, left_version INTEGER NOT NULL, left_seq INTEGER NOT NULL,
      right_version INTEGER NOT NULL, right_seq INTEGER NOT NULL,
      PRIMARY KEY (version, seq)) WITHOUT ROWID;
  `);
}

/** Drops a log and a branch table when present. */
export function dropNodeTables(db: Connection, t: NodeTables): void {
  db.exec(`DROP TABLE IF EXISTS ${t.log}; DROP TABLE IF EXISTS ${t.branch};`);
}

/** Writes one operation of `version`'s log. */
export function insertLog(db: Connection, t: NodeTables, version: number, r: LogRow): void {
  sql(db, `INSERT INTO ${t.log} (version, seq, key, kind, hash) VALUES (?, ?, ?, ?, ?)`).run(version, r.seq, r.key, r.kind, r.hash);
}

/** Writes a leaf of a tree that is not replayed from a log (an import, the survivors of a prune). */
export function insertLeaf(db: Connection, t: NodeTables, r: LeafRow): void {
  insertLog(db, t, r.version, { seq: r.seq, key: r.key, kind: OpKind.Leaf, hash: r.hash });
}

/** Writes one branch. */
export function insertBranch(db: Connection, t: NodeTables, b: BranchRow): void {
  sql(
    db,
    `INSERT INTO ${t.branch} (version, seq, key, height, size, hash, left_version, left_seq, right_version, right_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(b.version, b.seq, b.key, b.height, b.size, b.hash, b.leftVersion, b.leftSeq, b.rightVersion, b.rightSeq);
}
