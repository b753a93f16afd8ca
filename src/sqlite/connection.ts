/**
 * Opening the store's SQLite file with the settings the design relies on, and the statement cache every module of
 * this folder shares.
 * @module
 */
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { fromSqlite, IavlError, sqliteCode } from "../base/errors.js";

/** An open SQLite connection. Other layers hold it and pass it back here; only src/sqlite runs SQL on it. */
export type Connection = Database.Database;

/** A prepared statement. */
export type Statement = Database.Statement;

/** File name of the store database inside the store folder. */
export const STORE_FILE = "iavl.sqlite";

/** The path of the store database in folder `dir`; throws `NOT_A_STORE` unless `dir` is a folder holding one. */
export function storeFileIn(dir: string): string {
  if (!existsSync(dir)) throw new IavlError("NOT_A_STORE", `${dir} does not exist`);
  if (!statSync(dir).isDirectory()) throw new IavlError("NOT_A_STORE", `${dir} is not a folder`);
  const file = join(dir, STORE_FILE);
  if (!existsSync(file)) throw new IavlError("NOT_A_STORE", `${dir} holds no iavlite store (no ${STORE_FILE})`);
  return file;
}

/** How a writing connection syncs: see the `durability` option. "off" is for files not yet visible (imports). */
export type Sync = "normal" | "full" | "off";

/** The default wait for another connection's lock, in ms (the `busyTimeoutMs` option). */
export const DEFAULT_BUSY_TIMEOUT_MS = 10_000;

/** The size a WAL that starts over is cut back to (SQLite's journal_size_limit). */
export const WAL_SIZE_LIMIT_BYTES = 64 * 2 ** 20;

/** The size of a database file, without its WAL (0 while absent). */
export function databaseBytes(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/** Opens `file` for writing (WAL, incremental auto-vacuum so that pruning can shrink the file). */
export function openWriter(file: string, sync: Sync, busyTimeoutMs = DEFAULT_BUSY_TIMEOUT_MS): Connection {
  const db = openChecked(file, false, busyTimeoutMs);
  // Settings of the file itself, made once: changing them takes a lock, which another writer may hold.
  if (db.pragma("journal_mode", { simple: true }) !== "wal") {
    // auto_vacuum only takes effect before the first table is created.
    db.pragma("auto_vacuum = INCREMENTAL");
    db.pragma("journal_mode = WAL");
  }
  // WAL + NORMAL loses nothing when the process dies (only on power loss); FULL syncs the WAL on every commit.
  db.pragma(`synchronous = ${sync.toUpperCase()}`);
  // Checkpoints run off the commit path (wal.ts); a WAL started over is cut back to this size.
  db.pragma("wal_autocheckpoint = 0");
  db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
  tune(db, busyTimeoutMs);
  return db;
}

/** Opens `file` read-only: it never writes and never blocks the writer. */
export function openReader(file: string, busyTimeoutMs = DEFAULT_BUSY_TIMEOUT_MS): Connection {
  const db = openChecked(file, true, busyTimeoutMs);
  tune(db, busyTimeoutMs);
  return db;
}

/** Changes how a writing connection syncs (an import syncs only its last transaction). */
export function setSync(db: Connection, sync: Sync): void {
  db.pragma(`synchronous = ${sync.toUpperCase()}`);
}

/**
 * Maps up to `bytes` of the file into memory on a connection that scans a whole version (an export's leaves):
 * pages are then read without a copy. Not for the writer, whose memory it would grow.
 */
export function mapFile(db: Connection, bytes: number): void {
  db.pragma(`mmap_size = ${bytes}`);
}

/**
 * Runs `read`'s statements in one read transaction, so that they all see one state of the file. SQLite's failures
 * come out as the coded errors they mean ({@link fromSqlite}), naming the file.
 */
export function snapshot<T>(db: Connection, read: () => T): T {
  try {
    return db.transaction(read)();
  } catch (e) {
    throw fromSqlite(e, `${db.name}: reading`);
  }
}

/** Moves every page of the WAL into the database file and empties the WAL. */
export function checkpointWal(db: Connection): void {
  db.pragma("wal_checkpoint(TRUNCATE)");
}

const busyTimeouts = new WeakMap<Connection, number>();

/** The busy timeout `db` was opened with, in ms. */
export function busyTimeoutOf(db: Connection): number {
  return busyTimeouts.get(db) ?? DEFAULT_BUSY_TIMEOUT_MS;
}

function tune(db: Connection, busyTimeoutMs: number): void {
  db.pragma(`busy_timeout = ${busyTimeoutMs}`);
  busyTimeouts.set(db, busyTimeoutMs);
  // 32 MiB: enough for the interior pages of the big tables (ARCHITECTURE.md, "Measurements behind the design").
  db.pragma("cache_size = -32768");
  db.pragma("temp_store = MEMORY");
}

function openChecked(file: string, readonly: boolean, busyTimeoutMs: number): Connection {
  let db: Connection;
  try {
    db = new Database(file, { readonly, fileMustExist: readonly, timeout: busyTimeoutMs });
  } catch (e) {
    throw openFailure(e, file, readonly);
  }
  try {
    // Reading the schema is the cheapest way to find a file that is not a database at all.
    db.prepare("SELECT count(*) FROM sqlite_master").get();
  } catch (e) {
    db.close();
    throw ioFailure(e, `opening ${file}`) ?? new IavlError("CORRUPT", `${file} is not a readable SQLite database: ${(e as Error).message}`, { cause: e });
  }
  return db;
}

/** `e` as IO_ERROR, DISK_FULL or LOCKED when the disk or another connection (not the file's bytes) made it. */
function ioFailure(e: unknown, doing: string): IavlError | undefined {
  const mapped = fromSqlite(e, doing);
  return mapped instanceof IavlError && mapped.code !== "CORRUPT" ? mapped : undefined;
}

/**
 * What `new Database(file)` failing with `e` means: a file a read-only open cannot find is `NOT_A_STORE`; a disk or
 * lock failure of a writer's open its code; anything else a file SQLite cannot open (`CORRUPT`). `what` names the
 * file in the message.
 */
export function openFailure(e: unknown, file: string, readonly: boolean, what = file): IavlError {
  const io = readonly && sqliteCode(e) === "SQLITE_CANTOPEN" ? undefined : ioFailure(e, `opening ${what}`);
  return io ?? new IavlError(readonly ? "NOT_A_STORE" : "CORRUPT", `cannot open ${what}: ${(e as Error).message}`, { cause: e });
}

const statements = new WeakMap<Connection, Map<string, Statement>>();

/** The statement for `sql` on `db`, prepared once per connection. */
export function sql(db: Connection, text: string): Statement {
  let byText = statements.get(db);
  if (byText === undefined) statements.set(db, (byText = new Map()));
  let s = byText.get(text);
  if (s === undefined) byText.set(text, (s = db.prepare(text)));
  return s;
}

/** Forgets the statements prepared on `db` (after tables they name were dropped). */
export function forgetStatements(db: Connection): void {
  statements.delete(db);
}
