/**
 * Reading one committed version whole: its row is read first, and every read after is checked to have seen the
 * version still kept and not replaced by a rollback; and the value of a stored leaf, read from its value row.
 * @module
 */
import { fromSqlite, IavlError } from "../../base/errors.js";
import type { ValueOf } from "../../tree/store-contract.js";
import type { VersionRow } from "../../sqlite/rows.js";
import type { VersionState } from "../../sqlite/version-reader.js";
import type { StoreReader } from "../../sqlite/store-reader.js";
import type { LeafReader } from "../../sqlite/leaf-reader.js";

/** The value of a stored leaf: its own value row. */
export function storedValue(store: StoreReader): ValueOf {
  return (t, leaf) => {
    const held = t.value(leaf);
    if (held !== undefined) return held;
    let v: Uint8Array | null | undefined;
    try {
      v = store.leaves.valueAt(t.keyBytes(leaf), t.version(leaf));
    } catch (e) {
      throw fromSqlite(e, `${store.db.name}: reading a value of version ${t.version(leaf)}`);
    }
    if (v === undefined || v === null) throw new IavlError("CORRUPT", `the value of a leaf of version ${t.version(leaf)} is missing`);
    return v;
  };
}

/** A version row, and the count of rollbacks the store had recorded before the row was read. */
export interface ReadStart {
  row: VersionRow;
  since: number;
}

/**
 * Reads the row of `version` to begin reading it; throws `VERSION_PRUNED` or `VERSION_NOT_FOUND` when it is not kept.
 * `since`: the rollbacks counted when a longer read (a change stream over many versions) began, so that a rollback
 * during it shows in every version it reads after, not only in the one being read.
 */
export function startRead(store: StoreReader, version: number, since?: number): ReadStart {
  try {
    // The count first: a rollback between the two reads then shows as a later one.
    const from = since ?? store.versions.rollbacks();
    const row = store.versions.row(version);
    if (row === undefined) throw store.versions.missing(version);
    return { row, since: from };
  } catch (e) {
    // A damaged page of the versions table (simulator seed 2861632512 found SQLite's own error escaping here).
    throw fromSqlite(e, `${store.db.name}: reading the row of version ${version}`);
  }
}

/** The reads of one version that began at `start`. */
export class VersionRead {
  readonly row: VersionRow;
  /** Rollbacks the store had recorded when the read began: one after that below the version replaces it. */
  readonly since: number;

  constructor(
    readonly store: StoreReader,
    start: ReadStart,
    /** Throws when the owner was closed: checked before every read and between the rows of an iteration. */
    readonly alive: () => void,
    /** True while nothing can have removed the version since the read began (its writer's knowledge; none: unknown). */
    private readonly stillKept?: () => boolean,
  ) {
    this.row = start.row;
    this.since = start.since;
  }

  /**
   * Runs a read so that it sees the version whole, or throws `VERSION_PRUNED` / `VERSION_ROLLED_BACK`: pruning
   * deletes a version row before any data the version reads, and a rollback records itself with its deletions, so a
   * version still "kept" after the read proves the read saw it whole.
   */
  readonly run = <T>(fn: () => T): T => {
    this.alive();
    try {
      let r: T;
      try {
        r = fn();
      } catch (e) {
        this.check();
        throw e;
      }
      this.check();
      return r;
    } catch (e) {
      throw this.failure(e);
    }
  };

  /** The value of `key` in this version, read and checked in one statement: the commonest read, one crossing. */
  value(key: Uint8Array): Uint8Array | undefined {
    this.alive();
    let read: ReturnType<LeafReader["valueChecked"]>;
    let state: VersionState;
    try {
      if (this.stillKept?.() === true) return this.store.leaves.valueAt(key, this.row.version) ?? undefined;
      read = this.store.leaves.valueChecked(key, this.row.version);
      // stateOf reads the rollbacks recorded when the count moved: a damaged page there is CORRUPT too.
      state = this.store.versions.stateOf(this.row.version, this.since, read[1], read[2]);
    } catch (e) {
      throw this.failure(e);
    }
    this.throwIfGone(state);
    return read[0];
  }

  /** A failure of SQLite as the coded error it means, naming the file and the version. */
  private failure(e: unknown): unknown {
    return fromSqlite(e, `${this.store.db.name}: reading version ${this.row.version}`);
  }

  private check(): void {
    this.throwIfGone(this.store.versions.state(this.row.version, this.since));
  }

  private throwIfGone(state: VersionState): void {
    if (state === "pruned") throw new IavlError("VERSION_PRUNED", `version ${this.row.version} was pruned while it was being read`);
    if (state === "rolled-back") {
      throw new IavlError("VERSION_ROLLED_BACK", `version ${this.row.version} was removed by a rollback after this view began reading it`);
    }
  }
}
