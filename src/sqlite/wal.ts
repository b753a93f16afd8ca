/**
 * Checkpoints of the write-ahead log, kept off the commit path: writing connections never checkpoint by themselves;
 * a checkpointer thread copies committed pages into the database file after commits, and the writer restarts the
 * WAL itself only when it grew past its bound.
 * @module
 */
import { statSync } from "node:fs";
import type { Connection } from "./connection.js";
import { retryBusy } from "./write-errors.js";

/**
 * Who checkpoints the WAL of a writer's files. `"own"`: iavlite (a checkpointer thread after commits, a RESTART past
 * {@link WAL_BOUND_BYTES}). `"external"`: another process that follows the WAL, such as Litestream, which must be the
 * only one to checkpoint it; iavlite then never checkpoints, and the WAL grows until that process does.
 */
export type WalCheckpoints = "own" | "external";

/** The WAL size past which the writer checkpoints before it commits, waiting for readers if it must. */
export const WAL_BOUND_BYTES = 256 * 2 ** 20;

/** Copies what it can from the WAL into the database file without waiting; returns the frames left in the WAL. */
export function passiveWalCheckpoint(db: Connection): number {
  const [r] = db.pragma("wal_checkpoint(PASSIVE)") as Array<{ busy: number; log: number; checkpointed: number }>;
  return r === undefined ? 0 : Math.max(0, r.log - r.checkpointed);
}

/**
 * Before a commit on `db` (the store `file`'s writing connection): when the WAL grew past {@link WAL_BOUND_BYTES}
 * (the checkpointer could not keep up, or readers held old pages), checkpoints it whole and starts it over,
 * waiting for readers as a write would. This keeps the WAL bounded whatever readers do.
 */
export function boundWal(db: Connection, file: string): void {
  let size: number;
  try {
    size = statSync(`${file}-wal`).size;
  } catch {
    return;
  }
  if (size > WAL_BOUND_BYTES) checkpointRestart(db);
}

function checkpointRestart(db: Connection): void {
  retryBusy(db, "checkpointing the write-ahead log", () => {
    const [r] = db.pragma("wal_checkpoint(RESTART)") as Array<{ busy: number }>;
    if (r !== undefined && r.busy !== 0) throw Object.assign(new Error("the WAL checkpoint is blocked by a reader"), { code: "SQLITE_BUSY" });
  });
}
