/**
 * Opening the store's SQLite file with the settings the design relies on.
 * @module
 */
import Database from "better-sqlite3";
import { IavlError } from "../errors.js";

/** How much a commit survives: see `TreeOptions.durability`. */
export type Durability = "normal" | "full" | "async";

/** File name of the store database inside the store folder. */
export const STORE_FILE = "iavl.sqlite";

/** Opens `file` for writing (WAL, incremental auto-vacuum so that pruning can shrink the file). */
export function openWriter(file: string, durability: Durability): Database.Database {
  const db = openChecked(file, false);
  // auto_vacuum only takes effect before the first table is created, which is why it is set on every open.
  db.pragma("auto_vacuum = INCREMENTAL");
  db.pragma("journal_mode = WAL");
  // WAL + NORMAL loses nothing when the process dies (only on power loss); FULL syncs the WAL on every commit.
  db.pragma(`synchronous = ${durability === "full" ? "FULL" : "NORMAL"}`);
  tune(db);
  return db;
}

/** Opens `file` read-only: it never writes and never blocks the writer. */
export function openReader(file: string): Database.Database {
  const db = openChecked(file, true);
  tune(db);
  return db;
}

function tune(db: Database.Database): void {
  db.pragma("busy_timeout = 10000");
  // 32 MiB of page cache holds the interior pages of the big tables; more only grows RSS (memory-mapped I/O too).
  db.pragma("cache_size = -32768");
  db.pragma("temp_store = MEMORY");
}

function openChecked(file: string, readonly: boolean): Database.Database {
  let db: Database.Database;
  try {
    db = new Database(file, { readonly, fileMustExist: readonly });
  } catch (e) {
    throw new IavlError(readonly ? "NOT_A_STORE" : "CORRUPT", `cannot open ${file}: ${(e as Error).message}`, { cause: e });
  }
  try {
    // Reading the schema is the cheapest way to find a file that is not a database at all.
    db.prepare("SELECT count(*) FROM sqlite_master").get();
  } catch (e) {
    db.close();
    throw new IavlError("CORRUPT", `${file} is not a readable SQLite database: ${(e as Error).message}`, { cause: e });
  }
  return db;
}
