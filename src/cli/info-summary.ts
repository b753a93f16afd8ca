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
  orphanedBranchCount,
  pageRowCount,
  pageUse,
  readStoreStats,
  schemaNumber,
  shardRows,
  type StatsSource,
} from "../sqlite/store-stats.js";

/** What {@link storeInfo} reports of a store: what store-stats.ts reads (each function there says what), and the files and writer. */
export type StoreInfo = { dir: string } & ReturnType<typeof tables> & {
  /** Bytes on disk of the database, its WAL and its shared-memory index (0 when absent). */
  disk: { db: number; wal: number; shm: number; total: number };
  /** `held`: a process holds the writer lock now; `holder`: what `writer.json` records (the last writer when not held). */
  writer: { held: boolean; holder: Holder | null };
};

/** The tables' account of the store, in one read transaction. */
function tables(s: StatsSource) {
  const meta = metaRows(s);
  return {
    schema: schemaNumber(s),
    versions: keptVersions(s),
    latest: latestVersionRow(s),
    checkpoints: checkpointVersions(s),
    shardSize: Number(meta["shard_size"] ?? 1000),
    shards: shardRows(s),
    orphanedBranches: orphanedBranchCount(s),
    pageRows: pageRowCount(s),
    leafRows: leafRowCount(s),
    opsRows: opsRowCount(s),
    meta,
    pages: pageUse(s),
  };
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
  return { dir, ...readStoreStats(dir, tables), disk, writer: { held: lockHeld(dir), holder: readHolder(dir) ?? null } };
}

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}
