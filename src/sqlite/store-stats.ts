/**
 * Counts and sizes read from a store's tables for `iavlite info` (which assembles them, in src/cli): each function
 * reads one thing, on a connection {@link readStoreStats} opened read-only and checked.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { openReader, storeFileIn, type Connection } from "./connection.js";
import { allMeta } from "./meta.js";
import { appliedVersion, checkSchema } from "./migrate.js";
import { shardTable } from "./shards.js";
import { KEY_BYTES } from "./orphaned-branches.js";

/** A read-only connection to a store checked to be one, with the names of its tables. */
export interface StatsSource {
  readonly db: Connection;
  readonly tables: ReadonlySet<string>;
}

/** The tables every iavlite store holds. */
export const STORE_TABLES = ["versions", "leaves", "version_ops", "shards", "meta"];

/**
 * Runs `read` on a read-only connection to the store of `dir`, in one read transaction so that every count describes
 * the same state even while a writer commits. Throws `NOT_A_STORE` for a folder without an iavlite store,
 * `SCHEMA_TOO_NEW` for one written by a newer version.
 */
export function readStoreStats<T>(dir: string, read: (s: StatsSource) => T): T {
  const file = storeFileIn(dir);
  const db = openReader(file);
  try {
    checkSchema(db, file, true);
    const tables = new Set(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[]);
    const missing = STORE_TABLES.filter((t) => !tables.has(t));
    if (missing.length > 0) throw new IavlError("NOT_A_STORE", `${file} is not an iavlite store (no ${missing.join(", ")} table)`);
    return db.transaction(() => read({ db, tables }))();
  } finally {
    db.close();
  }
}

function count(db: Connection, sql: string): number {
  return Number(db.prepare(sql).pluck().get() ?? 0);
}

function maybe(db: Connection, sql: string): number | null {
  const v = db.prepare(sql).pluck().get();
  return v === null || v === undefined ? null : Number(v);
}

/** The schema (migration) number the store is at. */
export function schemaNumber(s: StatsSource): number {
  return appliedVersion(s.db);
}

/** How many versions are kept, and the first and last of them (null when none). */
export function keptVersions(s: StatsSource): { count: number; first: number | null; last: number | null } {
  return {
    count: count(s.db, "SELECT count(*) FROM versions"),
    first: maybe(s.db, "SELECT min(version) FROM versions"),
    last: maybe(s.db, "SELECT max(version) FROM versions"),
  };
}

/** The newest version's number, root hash and key count; null before the first commit. */
export function latestVersionRow(s: StatsSource): { version: number; hash: Uint8Array; size: number } | null {
  const row = s.db.prepare("SELECT version, hash, size FROM versions ORDER BY version DESC LIMIT 1").get() as
    | { version: number; hash: Uint8Array; size: number }
    | undefined;
  return row === undefined ? null : { version: row.version, hash: new Uint8Array(row.hash), size: row.size };
}

/** How many versions have every branch stored (tree checkpoints), and the latest of them. */
export function checkpointVersions(s: StatsSource): { count: number; latest: number | null } {
  return {
    count: count(s.db, "SELECT count(*) FROM versions WHERE checkpoint = 1"),
    latest: maybe(s.db, "SELECT max(version) FROM versions WHERE checkpoint = 1"),
  };
}

/** Each shard of the branch tables: its versions and how many branch rows its table holds. */
export function shardRows(s: StatsSource): Array<{ id: number; first: number; last: number; branchRows: number }> {
  const rows = s.db.prepare("SELECT id, first, last FROM shards ORDER BY id").all() as Array<{ id: number; first: number; last: number }>;
  return rows.map((r) => {
    const t = shardTable(r.id);
    // A shard row may precede its table (or outlive it after a prune): count only what exists.
    return { ...r, branchRows: s.tables.has(t) ? count(s.db, `SELECT count(*) FROM ${t}`) : 0 };
  });
}

/** Replaced branches recorded and not yet deleted: a prune deletes them once its base passes (a kept snapshot's stay). */
export function orphanedBranchCount(s: StatsSource): number {
  return s.tables.has("orphaned_branches") ? count(s.db, `SELECT coalesce(sum(length(nodes)), 0) / ${KEY_BYTES} FROM orphaned_branches`) : 0;
}

/** Rows of the `pages` table (layout 3: the subtrees of at most 16 leaves below the spine). */
export function pageRowCount(s: StatsSource): number {
  return s.tables.has("pages") ? count(s.db, "SELECT count(*) FROM pages") : 0;
}

/** Rows of the `leaves` table (one per key per version that set or removed it). */
export function leafRowCount(s: StatsSource): number {
  return count(s.db, "SELECT count(*) FROM leaves");
}

/** Rows of `version_ops` (the operations of versions that replays may need). */
export function opsRowCount(s: StatsSource): number {
  return count(s.db, "SELECT count(*) FROM version_ops");
}

/** Every row of the `meta` table. */
export function metaRows(s: StatsSource): Record<string, string | number | null> {
  return allMeta(s.db);
}

/** SQLite's page use: free pages are what a vacuum would give back. */
export function pageUse(s: StatsSource): { pageSize: number; pageCount: number; freelistCount: number } {
  return {
    pageSize: Number(s.db.pragma("page_size", { simple: true })),
    pageCount: Number(s.db.pragma("page_count", { simple: true })),
    freelistCount: Number(s.db.pragma("freelist_count", { simple: true })),
  };
}
