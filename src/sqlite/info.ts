/**
 * A read-only summary of a store folder: versions, checkpoints, shards, page use, files on disk and the writer.
 * @module
 */
import { statSync } from "node:fs";
import { IavlError } from "../base/errors.js";
import { openReader, storeFileIn, type Connection } from "./connection.js";
import { lockHeld, readHolder, type Holder } from "./lock.js";
import { allMeta } from "./meta.js";
import { appliedVersion, checkSchema } from "./migrate.js";
import { shardTable } from "./shards.js";

/** One shard of the node tables. */
export interface ShardInfo {
  id: number;
  /** First and last version the shard is for. */
  first: number;
  last: number;
  /** Rows of `branch_<id>` (stored branch nodes). */
  branchRows: number;
}

/** What {@link storeInfo} reports. */
export interface StoreInfo {
  dir: string;
  /** Schema (migration) number of the store. */
  schema: number;
  /** Versions kept (committed and not pruned). */
  versions: { count: number; first: number | null; last: number | null };
  /** The newest version: root hash and number of keys; null before the first commit. */
  latest: { version: number; hash: Uint8Array; size: number } | null;
  /** Versions whose every branch node is stored. */
  checkpoints: { count: number; latest: number | null };
  /** Versions per shard. */
  shardSize: number;
  shards: ShardInfo[];
  /** Rows of the `leaves` table (one per key per version that set or removed it). */
  leafRows: number;
  /** Versions whose operations are kept (those replays may need). */
  opsRows: number;
  /** Every row of the `meta` table. */
  meta: Record<string, string | number | null>;
  /** SQLite page use: free pages are reclaimable by vacuum. */
  pages: { pageSize: number; pageCount: number; freelistCount: number };
  /** Bytes on disk of the database, its WAL and its shared-memory index (0 when absent). */
  disk: { db: number; wal: number; shm: number; total: number };
  /**
   * The writer: `held` tells whether a process holds the lock right now; `holder` is what `writer.json` records
   * (the current writer when held, else the last one, which may be stale).
   */
  writer: { held: boolean; holder: Holder | null };
}

const REQUIRED_TABLES = ["versions", "leaves", "version_ops", "shards", "meta"];

/**
 * Reports on the store in `dir` without writing to it (beside a live writer is fine). Throws `NOT_A_STORE` for a
 * folder that does not hold an iavlite store, `SCHEMA_TOO_NEW` for one written by a newer version.
 */
export function storeInfo(dir: string): StoreInfo {
  const file = storeFileIn(dir);
  // Sizes first: opening the database may create the -wal and -shm files.
  const disk = { db: sizeOf(file), wal: sizeOf(`${file}-wal`), shm: sizeOf(`${file}-shm`), total: 0 };
  disk.total = disk.db + disk.wal + disk.shm;
  return withStore(dir, (db, tables) => {
    // One read transaction, so that every count describes the same state even while a writer commits.
    const r = db.transaction(() => ({ ...readTables(db, tables), schema: appliedVersion(db) }))();
    return { dir, ...r, disk, writer: writer(dir) };
  });
}

/** Runs `fn` on a read-only connection to the store of `dir`, after checking that it is one. */
function withStore<T>(dir: string, fn: (db: Connection, tables: Set<string>) => T): T {
  const file = storeFileIn(dir);
  const db = openReader(file);
  try {
    checkSchema(db, file, true);
    const tables = new Set(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[]);
    const missing = REQUIRED_TABLES.filter((t) => !tables.has(t));
    if (missing.length > 0) throw new IavlError("NOT_A_STORE", `${file} is not an iavlite store (no ${missing.join(", ")} table)`);
    return fn(db, tables);
  } finally {
    db.close();
  }
}

function readTables(db: Connection, tables: Set<string>): Omit<StoreInfo, "dir" | "disk" | "writer" | "schema"> {
  const num = (sql: string): number => Number(db.prepare(sql).pluck().get() ?? 0);
  const opt = (sql: string): number | null => {
    const v = db.prepare(sql).pluck().get();
    return v === null || v === undefined ? null : Number(v);
  };
  const latestRow = db.prepare("SELECT version, hash, size FROM versions ORDER BY version DESC LIMIT 1").get() as
    | { version: number; hash: Uint8Array; size: number }
    | undefined;
  const meta = allMeta(db);
  const shardRows = db.prepare("SELECT id, first, last FROM shards ORDER BY id").all() as Array<{ id: number; first: number; last: number }>;
  const shards = shardRows.map((s) => {
    const t = shardTable(s.id);
    // A shard row may precede its tables (or outlive them after a prune): count only what exists.
    const count = (name: string): number => (tables.has(name) ? num(`SELECT count(*) FROM ${name}`) : 0);
    return { id: s.id, first: s.first, last: s.last, branchRows: count(t) };
  });
  return {
    versions: {
      count: num("SELECT count(*) FROM versions"),
      first: opt("SELECT min(version) FROM versions"),
      last: opt("SELECT max(version) FROM versions"),
    },
    latest: latestRow === undefined ? null : { version: latestRow.version, hash: new Uint8Array(latestRow.hash), size: latestRow.size },
    checkpoints: {
      count: num("SELECT count(*) FROM versions WHERE checkpoint = 1"),
      latest: opt("SELECT max(version) FROM versions WHERE checkpoint = 1"),
    },
    shardSize: Number(meta["shard_size"] ?? 1000),
    shards,
    leafRows: num("SELECT count(*) FROM leaves"),
    opsRows: num("SELECT count(*) FROM version_ops"),
    meta,
    pages: {
      pageSize: Number(db.pragma("page_size", { simple: true })),
      pageCount: Number(db.pragma("page_count", { simple: true })),
      freelistCount: Number(db.pragma("freelist_count", { simple: true })),
    },
  };
}

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

function writer(dir: string): StoreInfo["writer"] {
  return { held: lockHeld(dir), holder: readHolder(dir) ?? null };
}
