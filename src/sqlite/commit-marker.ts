/**
 * The commit marker of a multi-store (`commits.sqlite`): which version every store has committed, and its app hash.
 * A version is begun (its row written with no hash) before any store commits it and completed after all have, so
 * that reopening knows exactly which version a crash interrupted. A rollback of the folder is recorded the same way:
 * the marker drops the versions after the target and notes the target before any store deletes them, and the note
 * is cleared once every store is back, so that reopening after a crash finishes the rollback instead of refusing
 * stores that are ahead of the marker.
 * @module
 */
import Database from "better-sqlite3";
import { fromSqlite } from "../base/errors.js";
import { blob } from "./rows.js";
import { openFailure, openReader, sql, type Sync } from "./connection.js";
import type { WalCheckpoints } from "./wal.js";
import { retryBusy } from "./write-errors.js";

/** A marker row: a version whole in every store, and its app hash. */
export interface MarkerRow {
  version: number;
  appHash: Uint8Array;
}

/** File name of the marker inside a multi-store folder. */
export const MARKER_FILE = "commits.sqlite";

/** The tables every marker holds (a marker older than rollbacks lacks the `rollback` table). */
export const MARKER_TABLES = ["commits"];

/** The marker's account of the versions. */
export interface MarkerState {
  /** The newest version every store committed (0: none). */
  whole: number;
  /** A version begun and not completed (a crash between store commits), if any. */
  pending: number | undefined;
  /** True when the marker holds no row at all (new, or lost and recreated). */
  empty: boolean;
  /** The version a rollback of the folder is bringing every store back to, while one is unfinished. */
  rollingBackTo: number | undefined;
}

/** The open marker of one multi-store. */
export class CommitMarker {
  private constructor(private readonly db: Database.Database) {}

  /**
   * Opens the marker `file` (creating it), or read-only when `readonly`. With `checkpoints` "external" its writes
   * never checkpoint the WAL (SQLite's automatic checkpoint is off), as the stores' never do then.
   */
  static open(file: string, sync: Sync, readonly = false, checkpoints: WalCheckpoints = "own"): CommitMarker {
    let db: Database.Database;
    try {
      db = new Database(file, { readonly, fileMustExist: readonly });
    } catch (e) {
      throw openFailure(e, file, readonly, `the commit marker ${file}`);
    }
    try {
      if (!readonly) {
        db.pragma("journal_mode = WAL");
        db.pragma(`synchronous = ${sync.toUpperCase()}`);
        if (checkpoints === "external") db.pragma("wal_autocheckpoint = 0");
        db.exec("CREATE TABLE IF NOT EXISTS commits (version INTEGER PRIMARY KEY, app_hash BLOB)");
        // At most one row: the target of an unfinished rollback.
        db.exec("CREATE TABLE IF NOT EXISTS rollback (one INTEGER PRIMARY KEY CHECK (one = 1), version INTEGER NOT NULL)");
      }
      db.pragma("busy_timeout = 10000");
    } catch (e) {
      // A new marker on a full disk.
      db.close();
      throw fromSqlite(e, `opening the commit marker ${file}`);
    }
    return new CommitMarker(db);
  }

  /** What the marker says. */
  state(): MarkerState {
    const whole = (this.db.prepare("SELECT max(version) FROM commits WHERE app_hash IS NOT NULL").pluck().get() as number | null) ?? 0;
    const pending = (this.db.prepare("SELECT max(version) FROM commits WHERE app_hash IS NULL").pluck().get() as number | null) ?? undefined;
    const rows = this.db.prepare("SELECT count(*) FROM commits").pluck().get() as number;
    // A marker opened read-only may be older than the rollback table.
    const noted = this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'rollback'").get() !== undefined;
    const rollingBackTo = noted ? ((this.db.prepare("SELECT version FROM rollback").pluck().get() as number | undefined) ?? undefined) : undefined;
    return { whole, pending, empty: rows === 0, rollingBackTo };
  }

  /** Records that the stores are about to commit `version`. */
  begin(version: number): void {
    retryBusy(this.db, `beginning version ${version}`, () => this.db.prepare("INSERT OR REPLACE INTO commits (version, app_hash) VALUES (?, NULL)").run(version));
  }

  /** Records that every store committed `version`, with its app hash. */
  complete(version: number, appHash: Uint8Array): void {
    retryBusy(this.db, `completing version ${version}`, () => this.db.prepare("INSERT OR REPLACE INTO commits (version, app_hash) VALUES (?, ?)").run(version, appHash));
  }

  /** Records that every store committed the versions of `rows` (a group's), in one transaction. */
  completeAll(rows: ReadonlyArray<MarkerRow>): void {
    const ins = this.db.prepare("INSERT OR REPLACE INTO commits (version, app_hash) VALUES (?, ?)");
    retryBusy(this.db, `completing versions ${rows[0]?.version}–${rows[rows.length - 1]?.version}`, () =>
      this.db.transaction(() => {
        for (const r of rows) ins.run(r.version, r.appHash);
      }).immediate(),
    );
  }

  /** Forgets a version begun and never completed (after its stores were rolled back). */
  abandon(version: number): void {
    this.db.prepare("DELETE FROM commits WHERE version = ? AND app_hash IS NULL").run(version);
  }

  /** Writes the rows of versions whose app hashes were recomputed from the stores (a lost marker). */
  rebuild(rows: MarkerRow[]): void {
    const ins = this.db.prepare("INSERT OR REPLACE INTO commits (version, app_hash) VALUES (?, ?)");
    this.db.transaction(() => {
      for (const r of rows) ins.run(r.version, r.appHash);
    })();
  }

  /** The app hash recorded for `version`, if it is whole. */
  appHashAt(version: number): Uint8Array | undefined {
    const h = this.db.prepare("SELECT app_hash FROM commits WHERE version = ? AND app_hash IS NOT NULL").pluck().get(version);
    return h === undefined ? undefined : blob(h);
  }

  /**
   * Forgets the rows of versions ≤ `upTo` that are older than `latest` (after the stores pruned them), except the
   * versions in `kept` (snapshots the prune kept in every store).
   */
  forget(upTo: number, latest: number, kept: readonly number[] = []): void {
    this.db
      .prepare("DELETE FROM commits WHERE version <= ? AND version < ? AND version NOT IN (SELECT value FROM json_each(?))")
      .run(upTo, latest, JSON.stringify(kept));
  }

  /**
   * Begins a rollback of the folder to `version`, in one transaction: forgets every version after it (whole or
   * begun), writes `rows` (the target's row when the marker lacks it), and notes the target, so that a crash before
   * {@link endRollback} is finished by the next open. Called before any store deletes a version.
   */
  beginRollback(version: number, rows: Array<{ version: number; appHash: Uint8Array }>): void {
    const ins = this.db.prepare("INSERT OR REPLACE INTO commits (version, app_hash) VALUES (?, ?)");
    retryBusy(this.db, `rolling back to version ${version}`, () =>
      this.db.transaction(() => {
        this.db.prepare("DELETE FROM commits WHERE version > ?").run(version);
        for (const r of rows) ins.run(r.version, r.appHash);
        this.db.prepare("INSERT OR REPLACE INTO rollback (one, version) VALUES (1, ?)").run(version);
      }).immediate(),
    );
  }

  /** Ends a rollback begun by {@link beginRollback}, once every store is back at its target. */
  endRollback(): void {
    retryBusy(this.db, "ending a rollback", () => this.db.prepare("DELETE FROM rollback").run());
  }

  close(): void {
    this.db.close();
  }
}

/**
 * A marker opened read-only, for query processes beside the writer (`MultiTree.openReadOnly`): one statement at a
 * time and no transaction held, so it never blocks the writer nor pins its WAL.
 */
export class MarkerReader {
  private constructor(private readonly db: Database.Database) {}

  /** Opens the marker `file` read-only; throws `NOT_A_STORE` when there is none. */
  static open(file: string): MarkerReader {
    return new MarkerReader(openReader(file));
  }

  /** The newest version every store committed and the marker completed (0: none yet). */
  whole(): number {
    return (this.read(() => sql(this.db, "SELECT max(version) FROM commits WHERE app_hash IS NOT NULL").pluck().get()) as number | null) ?? 0;
  }

  /** The app hash recorded for `version`, if the marker holds it whole. */
  appHashAt(version: number): Uint8Array | undefined {
    const h = this.read(() => sql(this.db, "SELECT app_hash FROM commits WHERE version = ? AND app_hash IS NOT NULL").pluck().get(version));
    return h === undefined || h === null ? undefined : blob(h);
  }

  /** Closes the connection. */
  close(): void {
    this.db.close();
  }

  /** Runs a read; a marker whose writer has not created its table yet holds nothing. */
  private read(fn: () => unknown): unknown {
    try {
      return fn();
    } catch (e) {
      if (e instanceof Error && /no such table: commits/.test(e.message)) return undefined;
      throw e;
    }
  }
}
