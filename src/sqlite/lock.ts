/**
 * The single-writer lock of a store folder: an exclusive SQLite transaction held on `writer.lock` for the life of
 * the writer. The OS drops it when the process dies, so a crash never leaves a stale lock behind.
 * @module
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { IavlError } from "../base/errors.js";

/**
 * The files of a store folder's writer lock, in the order to remove them: the lock file last, since once it is gone
 * another writer can lock a new one while this one still holds the old.
 */
export const LOCK_FILES = ["writer.json", "writer.lock-journal", "writer.lock"] as const;

/** Who holds a store, as written in `writer.json` by the holder. */
export interface Holder {
  pid: number;
  host: string;
  since: string;
}

/** Reads the recorded holder of the folder's lock, if any. */
export function readHolder(dir: string): Holder | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, "writer.json"), "utf8")) as Holder;
  } catch {
    return undefined;
  }
}

/** The held lock; `release()` lets the next writer in. */
export class WriterLock {
  private constructor(private db: Database.Database | undefined) {}

  /** Takes the lock of `dir` or throws `LOCKED` naming the holder. */
  static acquire(dir: string): WriterLock {
    // No busy wait: a held lock is an answer, not a delay.
    const db = new Database(join(dir, "writer.lock"), { timeout: 0 });
    try {
      db.pragma("journal_mode = DELETE");
      db.pragma("locking_mode = EXCLUSIVE");
      db.exec("BEGIN EXCLUSIVE");
    } catch (e) {
      db.close();
      const h = readHolder(dir);
      const who = h === undefined ? "another writer" : `process ${h.pid} on ${h.host} (since ${h.since})`;
      throw new IavlError("LOCKED", `the store ${dir} is held by ${who}`, { cause: e });
    }
    const holder: Holder = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
    writeFileSync(join(dir, "writer.json"), JSON.stringify(holder) + "\n");
    return new WriterLock(db);
  }

  /** Releases the lock; harmless twice. */
  release(): void {
    if (this.db === undefined) return;
    try {
      this.db.exec("ROLLBACK");
    } finally {
      this.db.close();
      this.db = undefined;
    }
  }
}

/**
 * Whether a writer holds the lock of `dir` now. The holder keeps an exclusive transaction on `writer.lock`, which
 * makes a read of that file fail at once; a free lock is read in an instant (the shared lock taken meanwhile could
 * make a writer starting at that very moment see the store as held, once).
 */
export function lockHeld(dir: string): boolean {
  const lockFile = join(dir, "writer.lock");
  if (!existsSync(lockFile)) return false;
  let probe: Database.Database | undefined;
  try {
    probe = new Database(lockFile, { readonly: true, fileMustExist: true, timeout: 0 });
    probe.prepare("SELECT count(*) FROM sqlite_master").get();
    return false;
  } catch (e) {
    // Only "locked"/"busy" means held; an unreadable lock file says nothing about a writer.
    return /locked|busy/i.test((e as Error).message);
  } finally {
    probe?.close();
  }
}
