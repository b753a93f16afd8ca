/**
 * Sharded node tables: each shard holds the log (leaves and deletes) and branch rows of a range of versions, so that
 * pruning can drop a whole shard with one statement instead of deleting rows.
 * @module
 */
import type Database from "better-sqlite3";

/** Sequences at or above this are leaves and deletes (rows of the log); below it, branches (as IAVL v2). */
export const LEAF_BASE = 2 ** 31;

/** The shard holding `version`, for shards of `shardSize` versions. */
export function shardOf(version: number, shardSize: number): number {
  return Math.floor(version / shardSize);
}

/** Table names of shard `id`. */
export function shardTables(id: number): { log: string; branch: string } {
  return { log: `log_${id}`, branch: `branch_${id}` };
}

/** Table names of compaction generation `gen`: the survivors of pruned shards. */
export function compactedTables(gen: number): { log: string; branch: string } {
  return { log: `log_c${gen}`, branch: `branch_c${gen}` };
}

/** Creates the tables of shard `id` (with its first and last version) when missing. */
export function createShard(db: Database.Database, id: number, shardSize: number): void {
  createNodeTables(db, shardTables(id));
  db.prepare("INSERT OR IGNORE INTO shards (id, first, last) VALUES (?, ?, ?)").run(id, id * shardSize, (id + 1) * shardSize - 1);
}

/** Creates a log and a branch table with the node schema. */
export function createNodeTables(db: Database.Database, t: { log: string; branch: string }): void {
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
