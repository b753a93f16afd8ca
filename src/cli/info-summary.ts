/**
 * The summary `iavlite info` prints for one store, assembled from what src/sqlite/store-stats.ts reads, the sizes of
 * the files on disk and the writer lock. It only reads: beside a live writer is fine.
 * @module
 */
import { statSync } from "node:fs";
import { storeFileIn } from "../sqlite/connection.js";
import { lockHeld, readHolder, type Holder } from "../sqlite/lock.js";
import {
  checkpointVersions,
  keptVersions,
  latestVersionRow,
  leafRowCount,
  metaRows,
  opsRowCount,
  pageUse,
  readStoreStats,
  schemaNumber,
  shardRows,
} from "../sqlite/store-stats.js";

/** What {@link storeInfo} reports of a store. */
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
  /** The shards of the branch tables: their versions and stored branch rows. */
  shards: Array<{ id: number; first: number; last: number; branchRows: number }>;
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

/**
 * Reports on the store in `dir` without writing to it. Throws `NOT_A_STORE` for a folder that does not hold an
 * iavlite store, `SCHEMA_TOO_NEW` for one written by a newer version.
 */
export function storeInfo(dir: string): StoreInfo {
  const file = storeFileIn(dir);
  // Sizes first: opening the database may create the -wal and -shm files.
  const disk = { db: sizeOf(file), wal: sizeOf(`${file}-wal`), shm: sizeOf(`${file}-shm`), total: 0 };
  disk.total = disk.db + disk.wal + disk.shm;
  const tables = readStoreStats(dir, (s) => {
    const meta = metaRows(s);
    return {
      schema: schemaNumber(s),
      versions: keptVersions(s),
      latest: latestVersionRow(s),
      checkpoints: checkpointVersions(s),
      shardSize: Number(meta["shard_size"] ?? 1000),
      shards: shardRows(s),
      leafRows: leafRowCount(s),
      opsRows: opsRowCount(s),
      meta,
      pages: pageUse(s),
    };
  });
  return { dir, ...tables, disk, writer: { held: lockHeld(dir), holder: readHolder(dir) ?? null } };
}

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}
