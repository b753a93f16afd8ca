/**
 * Checkpoints of the write-ahead log, kept off the commit path: writing connections never checkpoint by themselves;
 * a checkpointer thread copies committed pages into the database file after commits, and the writer restarts the
 * WAL itself only when it grew past its bound.
 * @module
 */
import { statSync } from "node:fs";
import { WAL_SIZE_LIMIT_BYTES, type Connection } from "./connection.js";
import { retryBusy } from "./write-errors.js";

/**
 * Who checkpoints the WAL of a writer's files. `"own"`: iavlite (a checkpointer thread after commits, a RESTART past
 * {@link WAL_BOUND_BYTES}). `"external"`: another process that follows the WAL, such as Litestream, which must be the
 * only one to checkpoint it; iavlite then never checkpoints, and the WAL grows until that process does.
 */
export type WalCheckpoints = "own" | "external";

/**
 * The WAL size past which the writer checkpoints before it commits, waiting for readers if it must, unless the
 * checkpointer is catching up (see {@link boundWal}).
 */
export const WAL_BOUND_BYTES = 256 * 2 ** 20;

/** The WAL size past which the writer checkpoints before it commits whatever the checkpointer reports. */
export const WAL_HARD_BOUND_BYTES = 4 * WAL_BOUND_BYTES;

/** Copies what it can from the WAL into the database file without waiting; returns the frames left in the WAL. */
export function passiveWalCheckpoint(db: Connection): number {
  const [r] = db.pragma("wal_checkpoint(PASSIVE)") as Array<{ busy: number; log: number; checkpointed: number }>;
  return r === undefined ? 0 : Math.max(0, r.log - r.checkpointed);
}

/**
 * Before a commit on `db` (the store `file`'s writing connection): when the WAL grew past {@link WAL_BOUND_BYTES},
 * checkpoints it whole and starts it over, waiting for readers as a write would. This keeps the WAL bounded whatever
 * readers do.
 *
 * `framesLeft`, when a checkpointer thread runs, is what its last pass left uncopied. A WAL that grew past the bound
 * in one big transaction (a checkpoint's branches) while the passes kept up is left to that thread, which is copying
 * it already: checkpointing here too would only wait for it, seconds of a commit (ARCHITECTURE.md). Past
 * {@link WAL_HARD_BOUND_BYTES}, or when the passes fell behind, the writer checkpoints itself.
 */
export function boundWal(db: Connection, file: string, framesLeft?: number): void {
  let size: number;
  try {
    size = statSync(`${file}-wal`).size;
  } catch {
    return;
  }
  if (size <= WAL_BOUND_BYTES) return;
  // Read only past the bound, which is rare: no cache of the page size is worth keeping.
  const keptUp = framesLeft !== undefined && framesLeft * (db.pragma("page_size", { simple: true }) as number) <= WAL_BOUND_BYTES / 4;
  if (!keptUp || size > WAL_HARD_BOUND_BYTES) checkpointRestart(db);
  // The few frames the checkpointer left, copied here without waiting, so that this commit starts the WAL over and
  // cuts its file back: with the writer thread and the prune thread both writing, a pass rarely ended with nothing
  // left just before a write, and the WAL's file stood at 405-765 MiB after the 1M-key churn.
  else passiveWalCheckpoint(db);
}

/**
 * Before a background writer's transaction on `db` (the store `file`): when the WAL is past the size a restarted one
 * is cut back to, copies it into the database file first, waiting for no one, so that the next write can start the
 * WAL over (and its commit cut the file back). A prune's transactions back to back never leave the
 * checkpointer thread a moment to catch up, and on a store that is not committing nothing else would bound its WAL:
 * at 300k keys an idle store's WAL grew by 800 MiB in 10 s of one prune.
 */
export function paceWal(db: Connection, file: string): void {
  let size: number;
  try {
    size = statSync(`${file}-wal`).size;
  } catch {
    return;
  }
  if (size > WAL_SIZE_LIMIT_BYTES) passiveWalCheckpoint(db);
}

function checkpointRestart(db: Connection): void {
  retryBusy(db, "checkpointing the write-ahead log", () => {
    const [r] = db.pragma("wal_checkpoint(RESTART)") as Array<{ busy: number }>;
    if (r !== undefined && r.busy !== 0) throw Object.assign(new Error("the WAL checkpoint is blocked by a reader"), { code: "SQLITE_BUSY" });
  });
}
