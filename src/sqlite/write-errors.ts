/**
 * What a failed write means to a caller: SQLite's result codes turned into coded errors, and the retry of writes
 * that met another connection's lock.
 * @module
 */
import { fromSqlite, IavlError, sqliteCode } from "../base/errors.js";
import { retrying } from "../base/thread-channel.js";
import { busyTimeoutOf, type Connection } from "./connection.js";

/** True when `e` says another connection held a lock (worth trying again). */
export function isBusy(e: unknown): boolean {
  const c = sqliteCode(e);
  return c !== undefined && (c.startsWith("SQLITE_BUSY") || c.startsWith("SQLITE_LOCKED"));
}

/**
 * `e`, a failed write, as the error a caller should see ({@link fromSqlite}): SQLite rolled the write back, so a
 * full disk or a failure of the operating system says that nothing of it was stored.
 */
export function asStoreError(e: unknown, doing: string): unknown {
  const mapped = fromSqlite(e, doing);
  if (mapped instanceof IavlError && (mapped.code === "DISK_FULL" || mapped.code === "IO_ERROR")) {
    return new IavlError(mapped.code, `${mapped.message}; nothing of it was stored`, { cause: e });
  }
  return mapped;
}

/** What each write on a connection waits for first, when anything (see {@link yieldBeforeWrites}). */
const beforeWrites = new WeakMap<Connection, () => void>();

/**
 * Makes every write on `db` through {@link retryBusy} (so every {@link writeTransaction}) call `wait` first: how a
 * background writer lets the store's owner go first (base/write-turn.ts).
 */
export function yieldBeforeWrites(db: Connection, wait: () => void): void {
  beforeWrites.set(db, wait);
}

/**
 * Runs `fn`, a write. When another connection holds the lock past SQLite's busy timeout, `fn` is tried again with
 * growing pauses, for up to five more timeouts: short locks (a prune's transaction, a WAL checkpoint) never
 * fail a write. Failures come out through {@link asStoreError}.
 */
export function retryBusy<T>(db: Connection, doing: string, fn: () => T): T {
  const wait = beforeWrites.get(db);
  try {
    return retrying(wait === undefined ? fn : () => (wait(), fn()), isBusy, 5 * Math.max(busyTimeoutOf(db), 100));
  } catch (e) {
    throw asStoreError(e, doing);
  }
}

/** Runs `fn` as one IMMEDIATE transaction, retried as {@link retryBusy} says. */
export function writeTransaction<T>(db: Connection, doing: string, fn: () => T): T {
  return retryBusy(db, doing, () => db.transaction(fn).immediate());
}
