/**
 * A store folder on disk: what it may hold, and opening it for writing under its writer lock.
 * @module
 */
import { existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fromSqlite, IavlError } from "../base/errors.js";
import { openReader, openWriter, STORE_FILE, type Connection, type Sync } from "../sqlite/connection.js";
import { lockHeld, LOCK_FILES, WriterLock } from "../sqlite/lock.js";
import { checkWal } from "../sqlite/wal-frames.js";
import { MARKER_FILE } from "../sqlite/commit-marker.js";
import { checkSchema, migrate } from "../sqlite/migrate.js";
import { StoreWriter } from "../sqlite/store-writer.js";
import { JOURNAL_FILE, landJournal } from "../sqlite/commit-journal.js";

/** Files a store folder may hold; anything else means the folder is not ours. */
const OWN_FILES = new Set<string>([STORE_FILE, `${STORE_FILE}-wal`, `${STORE_FILE}-shm`, JOURNAL_FILE, ...LOCK_FILES]);

/** How to open a store folder for writing. */
export interface FolderOptions {
  /** Versions per shard, recorded when the store is created (an existing store keeps its own). */
  shardSize: number;
  sync: Sync;
  busyTimeoutMs: number;
}

/** A store folder opened for writing: its connection, its lock, and the paths of its database and commit journal. */
export interface OpenFolder {
  db: Connection;
  lock: WriterLock;
  file: string;
  journal: string;
}

/**
 * Opens (creating when missing or empty) the store in `dir`, takes its writer lock, brings its schema up to date and
 * lands what the last writer's commit journal holds. A store this library must refuse (foreign, or written by a
 * newer schema) is refused before anything is written.
 */
export function openStoreFolder(dir: string, o: FolderOptions): OpenFolder {
  if (existsSync(dir)) {
    if (!statSync(dir).isDirectory()) throw new IavlError("NOT_A_STORE", `${dir} is not a folder`);
    const foreign = readdirSync(dir).filter((f) => !OWN_FILES.has(f));
    if (foreign.length > 0 && !existsSync(join(dir, STORE_FILE))) {
      if (foreign.includes(MARKER_FILE)) throw new IavlError("NOT_A_STORE", `${dir} is a multi-store folder, not a plain store: open it with MultiTree.open`);
      throw new IavlError("NOT_A_STORE", `${dir} is not an iavlite store (it holds ${foreign.slice(0, 3).join(", ")}…)`);
    }
  } else {
    mkdirSync(dir, { recursive: true });
  }
  const file = join(dir, STORE_FILE);
  if (existsSync(file)) {
    // Checked read-only first, so that a store this version must refuse is never opened for writing.
    const ro = openReader(file);
    try {
      checkSchema(ro, file);
    } finally {
      ro.close();
    }
  }
  const lock = WriterLock.acquire(dir);
  let db: Connection | undefined;
  try {
    // Under the lock: no writer appends to the WAL while it is read, and none has yet checkpointed what SQLite reads.
    checkWal(file);
    db = openWriter(file, o.sync, o.busyTimeoutMs);
    migrate(db, file);
    StoreWriter.init(db, o.shardSize);
    const journal = join(dir, JOURNAL_FILE);
    landJournal(db, journal);
    return { db, lock, file, journal };
  } catch (e) {
    db?.close();
    lock.release();
    // A new store's first tables, or an upgrade, on a full disk.
    throw fromSqlite(e, `opening ${file}`);
  }
}

/** Opens the store in `dir` for reading only, never writing; throws `NOT_A_STORE` when there is none. */
export function openFolderReadOnly(dir: string): Connection {
  const file = join(dir, STORE_FILE);
  if (!existsSync(file)) {
    const multi = existsSync(join(dir, MARKER_FILE));
    throw new IavlError("NOT_A_STORE", multi ? `${dir} is a multi-store folder, not a plain store: open it with MultiTree.openReadOnly` : `${dir} holds no iavlite store`);
  }
  // A live writer's WAL is being appended to (the writer checked it when it opened).
  if (!lockHeld(dir)) checkWal(file);
  const db = openReader(file);
  try {
    checkSchema(db, file, true);
    return db;
  } catch (e) {
    db.close();
    throw e;
  }
}
