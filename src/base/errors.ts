/**
 * The one error class the library throws on purpose, with a stable `code` to branch on.
 * @module
 */

/** Every code an {@link IavlError} can carry. New codes may be added; existing ones keep their meaning. */
export type ErrorCode =
  /** A key or value is not a `Uint8Array`, or an argument has the wrong type or range. */
  | "INVALID_ARGUMENT"
  /** Keys must be non-empty (as in cosmos/iavl). */
  | "EMPTY_KEY"
  /** Options failed validation; the message names the field and the rule. */
  | "INVALID_OPTIONS"
  /** The version was never committed (or is newer than the latest). */
  | "VERSION_NOT_FOUND"
  /** The version was committed once but has been pruned. */
  | "VERSION_PRUNED"
  /**
   * The version was removed by a rollback after this handle or view began reading it (it may have been committed
   * again since, with other content): open a new view.
   */
  | "VERSION_ROLLED_BACK"
  /** The tree was closed. */
  | "CLOSED"
  /** ICS23 cannot prove an empty value, neither as the key's own value nor as a neighbour's. */
  | "EMPTY_VALUE_PROOF"
  /** A proof was asked of an empty tree, which has nothing to prove against. */
  | "EMPTY_TREE"
  /** The working tree changed while an iterator over it was open. */
  | "CONCURRENT_MODIFICATION"
  /** Another writer holds the store. */
  | "LOCKED"
  /**
   * The folder holds something that is not an iavlite store, or not the kind asked for (a plain store's folder given
   * to `MultiTree.open`, a multi-store's to `Tree.open`).
   */
  | "NOT_A_STORE"
  /**
   * The stores named to `MultiTree.open` are not the folder's: one of its stores is left out, or one it lacks is named
   * without `addStores`. The message lists the folder's stores; nothing was changed.
   */
  | "STORES_MISMATCH"
  /** The store was written by a newer schema than this library knows. */
  | "SCHEMA_TOO_NEW"
  /**
   * The store was written by an older schema: a writer (`Tree.open`) upgrades it in place when it opens it, but a
   * read-only handle never writes, so it cannot read the store until then.
   */
  | "SCHEMA_TOO_OLD"
  /** The store's content contradicts itself (a hash or a row that does not add up). */
  | "CORRUPT"
  /** A write was attempted through a read-only handle. */
  | "READ_ONLY"
  /** A snapshot stream is not a valid post-order IAVL export, or its root hash does not match. */
  | "INVALID_SNAPSHOT"
  /**
   * The disk (or a size limit) is full. Nothing of the failed write was stored; the handle goes on, and the same
   * call may be repeated once space returns (see the README on durability "async").
   */
  | "DISK_FULL"
  /**
   * The operating system failed a read or write of the store's files. Nothing of the failed write was stored; the
   * call may be repeated, but a store whose disk keeps failing should be closed and checked with `iavlite verify`.
   */
  | "IO_ERROR"
  /**
   * A replica's source service did not answer, cut its answer, or failed with an error of its own; the replica waits
   * and asks again.
   */
  | "SOURCE_UNAVAILABLE";

/** An error of iavlite. `code` is stable across releases; the message is for people. */
export class IavlError extends Error {
  override readonly name = "IavlError";

  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** True when `e` is an {@link IavlError}, optionally with the given code. */
export function isIavlError(e: unknown, code?: ErrorCode): e is IavlError {
  return e instanceof IavlError && (code === undefined || e.code === code);
}

/** SQLite's extended result code of `e` ("SQLITE_FULL", "SQLITE_IOERR_WRITE", …), if it is a SQLite error. */
export function sqliteCode(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return e instanceof Error && typeof code === "string" && code.startsWith("SQLITE_") ? code : undefined;
}

/**
 * `e` as the {@link IavlError} it means when SQLite raised it: a damaged file is `CORRUPT`, a full disk or size limit
 * `DISK_FULL`, another connection's lock `LOCKED`, any other failure of the operating system `IO_ERROR`, each saying
 * what was being done (`doing`, which names the file) and SQLite's own words. Anything else is returned unchanged.
 */
export function fromSqlite(e: unknown, doing: string): unknown {
  const c = sqliteCode(e);
  if (c === undefined) return e;
  const why = `${c}: ${(e as Error).message}`;
  if (c.startsWith("SQLITE_CORRUPT") || c === "SQLITE_NOTADB") {
    return new IavlError("CORRUPT", `${doing}: the file is damaged (${why}); iavlite verify finds what else is`, { cause: e });
  }
  if (c === "SQLITE_FULL") return new IavlError("DISK_FULL", `${doing}: the disk is full (${why})`, { cause: e });
  if (c.startsWith("SQLITE_BUSY") || c.startsWith("SQLITE_LOCKED")) return new IavlError("LOCKED", `${doing}: the database stayed locked by another connection (${c})`, { cause: e });
  if (c.startsWith("SQLITE_IOERR") || c === "SQLITE_CANTOPEN" || c === "SQLITE_READONLY" || c === "SQLITE_PROTOCOL") {
    return new IavlError("IO_ERROR", `${doing}: the store's files could not be read or written (${why})`, { cause: e });
  }
  return e;
}

/**
 * `e` as the {@link IavlError} it means when the operating system raised it on a file iavlite writes itself (not
 * through SQLite): a full disk or size limit is `DISK_FULL`, any other failure `IO_ERROR`, the message ending with
 * `outcome`. Anything else is returned unchanged.
 */
export function fromFs(e: unknown, doing: string, outcome = ""): unknown {
  const c = (e as { code?: unknown } | null)?.code;
  if (!(e instanceof Error) || typeof c !== "string" || !c.startsWith("E")) return e;
  if (c === "ENOSPC" || c === "EDQUOT" || c === "EFBIG") return new IavlError("DISK_FULL", `${doing}: the disk is full (${c})${outcome}`, { cause: e });
  return new IavlError("IO_ERROR", `${doing}: the store's files could not be read or written (${e.message})${outcome}`, { cause: e });
}
