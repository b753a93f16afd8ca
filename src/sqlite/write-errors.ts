/**
 * What a failed write means to a caller: SQLite's result codes turned into coded errors, and the retry of writes
 * that met another connection's lock.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { retrying } from "../base/thread-channel.js";
import { busyTimeoutOf, type Connection } from "./connection.js";

/** SQLite's extended result code of `e` ("SQLITE_FULL", "SQLITE_IOERR_WRITE", …), if it is a SQLite error. */
function sqliteCode(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return e instanceof Error && typeof code === "string" && code.startsWith("SQLITE_") ? code : undefined;
}

/** True when `e` says another connection held a lock (worth trying again). */
export function isBusy(e: unknown): boolean {
  const c = sqliteCode(e);
  return c !== undefined && (c.startsWith("SQLITE_BUSY") || c.startsWith("SQLITE_LOCKED"));
}

/**
 * `e` as the error a caller should see: a full disk or file-size limit becomes `DISK_FULL`, any other failure of the
 * operating system `IO_ERROR`; everything else is returned unchanged.
 */
export function asStoreError(e: unknown, doing: string): unknown {
  const c = sqliteCode(e);
  if (c === undefined) return e;
  const why = (e as Error).message;
  if (c === "SQLITE_FULL") return new IavlError("DISK_FULL", `${doing}: the disk is full (${why}); nothing of it was stored`, { cause: e });
  if (c.startsWith("SQLITE_IOERR") || c === "SQLITE_CANTOPEN") {
    return new IavlError("IO_ERROR", `${doing}: the store's files could not be written (${c}: ${why}); nothing of it was stored`, { cause: e });
  }
  if (isBusy(e)) return new IavlError("LOCKED", `${doing}: the database stayed locked by another connection (${c})`, { cause: e });
  return e;
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
