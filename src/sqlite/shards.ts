/**
 * Node keys, and the branch tables: each shard holds the branch rows of a range of versions, so that pruning can drop
 * a whole shard with one statement instead of deleting rows; compacted generations hold the rows that outlived the
 * shards a prune dropped (and the branches of an import). Every branch row is written here.
 * @module
 */
import { sql, type Connection } from "./connection.js";
import type { BranchRow } from "./rows.js";

/**
 * Sequences at or above this name leaves (as in IAVL v2); below it, branches numbered per version. A leaf's node key
 * is (version, LEAF_BASE + id), id being its row in `leaves`.
 */
export const LEAF_BASE = 2 ** 31;

/** The node-key sequence of the leaf in leaves row `id`. */
export function leafSeq(id: number): number {
  return LEAF_BASE + id;
}

/** The leaves row of the leaf with node-key sequence `seq`. */
export function leafId(seq: number): number {
  return seq - LEAF_BASE;
}

/**
 * Layout 3: sequences at or above this name a node of a page row, as PAGE_BASE + page id · PAGE_SLOTS + slot, the slot
 * counted back from the page's root (0: the root; its nodes are stored in post-order, so slot s is node count − 1 − s).
 * Far above LEAF_BASE + any leaves row id, and still an exact float64 (ids below 2^45), in stored and in-memory form
 * alike. A link that names a page (a spine branch's child, a checkpoint's root) names slot 0 of it.
 */
export const PAGE_BASE = 2 ** 50;
/** Slots per page in a node key: at most 2 · PAGE_LEAVES − 1 nodes. */
export const PAGE_SLOTS = 32;
/**
 * The page size: a canonical page is a subtree whose root has at most this many leaves and whose parent more; the
 * nodes above the pages (the spine) are branch rows. 16 measured best (bench/pages.ts): 11 leaves a page, rows of
 * ~1.7 KB (2.4 KB at most, under SQLite's ~4 KB local payload limit), one page read per change past the budget.
 */
export const PAGE_LEAVES = 16;

/** The node-key sequence of slot `slot` of page `id`. */
export function pageSeq(id: number, slot: number): number {
  return PAGE_BASE + id * PAGE_SLOTS + slot;
}

/** True when `seq` names a node of a page. */
export function isPageSeq(seq: number): boolean {
  return seq >= PAGE_BASE;
}

/** The page of a page node's sequence. */
export function pageOfSeq(seq: number): number {
  return Math.floor((seq - PAGE_BASE) / PAGE_SLOTS);
}

/** The slot of a page node's sequence (0: the page's root). */
export function slotOfSeq(seq: number): number {
  return (seq - PAGE_BASE) % PAGE_SLOTS;
}

/** The shard holding `version`, for shards of `shardSize` versions. */
export function shardOf(version: number, shardSize: number): number {
  return Math.floor(version / shardSize);
}

/** The branch table of shard `id`. */
export function shardTable(id: number): string {
  return `branch_${id}`;
}

/** The branch table of compaction generation `gen`: the survivors of pruned shards. */
export function compactedTable(gen: number): string {
  return `branch_c${gen}`;
}

/** Creates the table of shard `id` (with its first and last version) when missing. */
export function createShard(db: Connection, id: number, shardSize: number): void {
  createBranchTable(db, shardTable(id));
  sql(db, "INSERT OR IGNORE INTO shards (id, first, last) VALUES (?, ?, ?)").run(id, id * shardSize, (id + 1) * shardSize - 1);
}

/** Creates a branch table when missing. */
export function createBranchTable(db: Connection, table: string): void {
  // Rows are keyed (version, seq) and written in that order, which keeps inserts sequential and the WAL small.
  db.exec(`CREATE TABLE IF NOT EXISTS ${table} (
    version INTEGER NOT NULL, seq INTEGER NOT NULL, key BLOB NOT NULL, height INTEGER NOT NULL,
    size INTEGER NOT NULL, hash BLOB NOT NULL, left_version INTEGER NOT NULL, left_seq INTEGER NOT NULL,
    right_version INTEGER NOT NULL, right_seq INTEGER NOT NULL, kids BLOB,
    PRIMARY KEY (version, seq)) WITHOUT ROWID`);
}

/** Drops a branch table when present. */
export function dropBranchTable(db: Connection, table: string): void {
  db.exec(`DROP TABLE IF EXISTS ${table}`);
}

/** The insert statement's text for each branch table: built once, so that a checkpoint's rows do not rebuild it. */
const insertTexts = new Map<string, string>();

/** Writes one branch. */
export function insertBranch(db: Connection, table: string, b: BranchRow): void {
  let text = insertTexts.get(table);
  if (text === undefined) {
    text = `INSERT INTO ${table} (version, seq, key, height, size, hash, left_version, left_seq, right_version, right_seq, kids) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
    insertTexts.set(table, text);
  }
  sql(db, text).run(b.version, b.seq, b.key, b.height, b.size, b.hash, b.leftVersion, b.leftSeq, b.rightVersion, b.rightSeq, b.kids);
}
