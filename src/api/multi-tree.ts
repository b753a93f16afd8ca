/**
 * Several named trees in one folder, committed together at one version: each store is a store folder of its own
 * under `stores/`, and a commit marker says which version is whole. A version is begun in the marker before any
 * store commits it and completed after all have, so that reopening after a crash knows exactly which version was
 * interrupted: stores that reached it are rolled back to the last whole version (or, when every store reached it,
 * the marker is completed). Nothing is ever deleted on a guess: a marker that is missing is rebuilt from the stores
 * when they agree, and stores that contradict the marker make `open` refuse, naming each store and its version
 * (multi-recovery.ts). A rollback of the folder ({@link MultiTree.rollback}, multi-rollback.ts) lowers the marker
 * first, noting its target, then rolls back the stores: reopening after a crash in between finishes it.
 * @module
 */
import { IavlError, isIavlError, type ErrorCode } from "../base/errors.js";
import { parseOptions } from "../base/options.js";
import { checkObject, checkString, checkVersion } from "../base/validate.js";
import type { CommitMarker, MarkerRow } from "../sqlite/commit-marker.js";
import type { PruneResult } from "../prune/pruner.js";
import type { PruneOptions } from "./backend.js";
import { commitInfoHash } from "./commit-info.js";
import { MultiReader } from "./multi-reader.js";
import { multiOptionsSchema, type MultiReadOptions, type MultiTreeOptions } from "./multi-options.js";
import { openFolder, type OpenedFolder } from "./multi-recovery.js";
import { rollbackFolder, type MultiRollback } from "./multi-rollback.js";
import type { Tree } from "./tree.js";

/** What {@link MultiTree.commit} returns. */
export interface MultiCommitResult {
  version: number;
  /** Root hash of every store. */
  hashes: Map<string, Uint8Array>;
  /** The Cosmos SDK CommitInfo hash over the stores. */
  appHash: Uint8Array;
}

/** Failures of a write that leave a store as it was (SQLite rolled the write back): the multi-store can go on. */
const DISK_CODES: ReadonlySet<ErrorCode> = new Set(["DISK_FULL", "IO_ERROR"]);

/** Several named IAVL trees committed together. */
export class MultiTree {
  private closed = false;
  private failed: unknown;
  /** A version every store committed whose completion the marker could not record (a full disk); told first next time. */
  private unrecorded: MarkerRow | undefined;
  /** While a group is open: the version it began at, and the app hash of each version committed in it since. */
  private grouping: { from: number; rows: MarkerRow[] } | undefined;
  /** The last version the marker records whole: what a crash brings the stores back to, so none prunes it. */
  private whole: number;

  private constructor(
    private readonly marker: CommitMarker,
    private readonly trees: Map<string, Tree>,
    private lastVersion: number,
    /** The `keepEvery` the stores were opened with: what {@link prune} keeps by default. */
    private readonly keepEvery: number | undefined,
    private readonly reopenAt: OpenedFolder["reopenAt"],
  ) {
    this.whole = lastVersion;
  }

  /**
   * Opens (or creates) the multi-store in `dir` with the given stores. On a folder that has committed a version,
   * `stores` must name exactly the folder's stores, but for those of `addStores`, which join at the next version: a
   * store of the folder left out, or a name it lacks and `addStores` does not list, is refused with
   * `STORES_MISMATCH`, naming the folder's stores (`multiStoreNames` lists them), and nothing is changed. A plain
   * store's folder is refused with `NOT_A_STORE`.
   */
  static open(dir: string, options: MultiTreeOptions): MultiTree {
    checkString(dir, "dir");
    const o = parseOptions(multiOptionsSchema, options);
    // Nothing commits, so nothing prunes, before the multi-store exists.
    let multi: MultiTree | undefined;
    const { marker, trees, whole, reopenAt } = openFolder(dir, o, () => multi?.whole ?? 0);
    multi = new MultiTree(marker, trees, whole, o.keepEvery, reopenAt);
    return multi;
  }

  /**
   * Opens the multi-store in `dir` read-only, for a query process beside the writer (or a plain store folder, whose
   * one store is named after the folder): see {@link MultiReader}. It never writes nor takes the writer lock.
   */
  static openReadOnly(dir: string, options?: MultiReadOptions): MultiReader {
    return MultiReader.open(dir, options);
  }

  /**
   * Rolls the multi-store folder `dir` (which no writer may hold) back to `version`: every store and the commit
   * marker together, so that `MultiTree.open` reopens it at `version`. Rolling back one store alone (`Tree.rollback`
   * on a folder under `stores/`) leaves it behind the others and the marker, which `open` refuses; this call also
   * repairs such a folder, rolled back to a version every store still holds.
   *
   * Every store's writer lock is taken first (`LOCKED`, naming the holder, changes nothing). Then the marker forgets
   * the versions after `version` and notes the rollback, each store deletes them, and the note is cleared: a crash
   * part-way leaves a folder that `open` (or this call again) finishes rolling back.
   *
   * Throws `NOT_A_STORE` when `dir` is not a multi-store folder, `VERSION_NOT_FOUND` when `version` is after the
   * marker's last whole version, `VERSION_PRUNED` / `VERSION_NOT_FOUND` naming a store that does not hold `version`,
   * and `CORRUPT` when the stores' root hashes at `version` do not give the app hash the marker recorded for it; in
   * each case nothing is changed.
   */
  static rollback(dir: string, version: number): MultiRollback {
    return rollbackFolder(dir, version);
  }

  /** The store `name`. */
  tree(name: string): Tree {
    this.ensureOpen();
    const t = this.trees.get(name);
    if (t === undefined) throw new IavlError("INVALID_ARGUMENT", `no store named ${name} (stores: ${[...this.trees.keys()].join(", ")})`);
    return t;
  }

  /** Names of the stores, sorted. */
  get names(): string[] {
    this.ensureOpen();
    return [...this.trees.keys()];
  }

  /** The last version committed by every store. */
  get version(): number {
    this.ensureOpen();
    return this.lastVersion;
  }

  /** The app hash of the last committed version (computed from the stores' hashes). */
  get appHash(): Uint8Array {
    this.ensureOpen();
    return commitInfoHash(new Map([...this.trees].map(([n, t]) => [n, t.hash])));
  }

  /**
   * Commits every store at the next version; the version is whole once this returns. When the disk is full (or
   * failing), the error says what was stored, and the multi-store goes on as a {@link Tree} does: stores that had
   * committed the version before another failed are brought back to the one before, with its operations pending
   * again, so that every store is where it was and `commit()` may be called again once space returns.
   */
  commit(): MultiCommitResult {
    this.ensureOpen();
    const version = this.lastVersion + 1;
    const g = this.grouping;
    // Fails with nothing written: the version was begun nowhere.
    if (g === undefined) this.beginMarker(version);
    const hashes = new Map<string, Uint8Array>();
    const committed: string[] = [];
    let failing = "";
    try {
      for (const [name, t] of this.trees) {
        failing = name;
        const c = t.commit();
        if (c.version !== version) throw new IavlError("CORRUPT", `store ${name} committed version ${c.version}, expected ${version}`);
        committed.push(name);
        hashes.set(name, c.hash);
      }
    } catch (e) {
      if (g === undefined && isIavlError(e) && DISK_CODES.has(e.code)) throw this.undo(version, committed, failing, e);
      // Some stores may be ahead now: refuse further work; reopening brings them back to the last whole version.
      this.failed = e;
      throw e;
    }
    const appHash = commitInfoHash(hashes);
    this.lastVersion = version;
    if (g !== undefined) g.rows.push({ version, appHash });
    else {
      try {
        this.marker.complete(version, appHash);
        this.whole = version;
      } catch (e) {
        if (!(isIavlError(e) && DISK_CODES.has(e.code))) {
          this.failed = e;
          throw e;
        }
        // Every store holds the version: it is committed (a reopen completes the marker from the stores). The
        // marker hears of it before the next version begins.
        this.unrecorded = { version, appHash };
      }
    }
    return { version, hashes, appHash };
  }

  /** Begins `version` in the marker, after recording the version before it whole if its completion failed. */
  private beginMarker(version: number): void {
    const u = this.unrecorded;
    if (u !== undefined) {
      this.marker.complete(u.version, u.appHash);
      this.whole = u.version;
      this.unrecorded = undefined;
    }
    this.marker.begin(version);
  }

  /**
   * After store `failing` could not commit `version` (a full or failing disk), brings the stores that had committed
   * it (`committed`) back to the version before, each with the version's operations pending again. Returns the error
   * to throw: `cause`'s code with what happened, or, when the stores cannot be brought back (no space even for that),
   * the multi-store refuses further work until reopened.
   */
  private undo(version: number, committed: string[], failing: string, cause: IavlError): IavlError {
    try {
      for (const name of committed) {
        const t = this.trees.get(name)!;
        const ops = t.operations(version);
        t.close();
        const back = this.reopenAt(name, version - 1);
        this.trees.set(name, back);
        for (const op of ops) {
          if (op.value === null) back.remove(op.key);
          else back.set(op.key, op.value);
        }
      }
    } catch (e) {
      this.failed = cause;
      return new IavlError(
        cause.code,
        `version ${version} was not committed: store ${failing}: ${cause.message}; stores ${committed.join(", ")} had committed it and could not be brought back (${(e as Error).message}): reopen to continue from version ${version - 1}`,
        { cause },
      );
    }
    const back = committed.length === 0 ? "" : `; store${committed.length > 1 ? "s" : ""} ${committed.join(", ")} had committed it and ${committed.length > 1 ? "are" : "is"} back at version ${version - 1}, the changes pending again`;
    return new IavlError(cause.code, `version ${version} was not committed: store ${failing}: ${cause.message}${back}; every store is at version ${version - 1}: commit() again once space returns`, { cause });
  }

  /**
   * Runs `fn` and lands the versions it commits together, as {@link Tree.group} does for one store: every store's in
   * one SQLite transaction of its own, and the marker's rows after them. Before any store lands, the marker records
   * the group's last version as begun, so that reopening after a crash part-way knows every store is either at it
   * or at the version the group began at, and completes the marker or rolls them back. Once `group` returns, or
   * throws what `fn` threw, every version `fn` committed is whole and durable; a commit in `fn` that fails drops the
   * whole group (reopen, as after any failed commit, to continue from the version the group began at).
   */
  group<T>(fn: () => T): T {
    this.ensureOpen();
    if (this.grouping !== undefined) throw new IavlError("INVALID_ARGUMENT", "a group of commits is already open on this multi-store");
    const opened: Tree[] = [];
    try {
      for (const t of this.trees.values()) {
        t.beginGroup();
        opened.push(t);
      }
    } catch (e) {
      for (const t of opened) t.endGroup(true);
      throw e;
    }
    this.grouping = { from: this.lastVersion, rows: [] };
    try {
      return fn();
    } finally {
      this.land();
    }
  }

  /** Ends the open group: lands its versions in every store and then in the marker, or drops them all after a failure. */
  private land(): void {
    const g = this.grouping!;
    this.grouping = undefined;
    const trees = [...this.trees.values()];
    if (this.failed !== undefined || g.rows.length === 0) {
      for (const t of trees) t.endGroup(this.failed !== undefined);
      return;
    }
    const last = this.lastVersion;
    let next = 0;
    try {
      this.marker.begin(last);
      for (; next < trees.length; next++) trees[next]!.endGroup();
      this.marker.completeAll(g.rows);
      this.whole = last;
    } catch (e) {
      // Stores at the group's end and at its start: reopening brings them back to the start (or completes the marker).
      this.failed = e;
      for (const t of trees.slice(next)) t.endGroup(true);
      throw e;
    }
  }

  /** The app hash recorded for committed `version`. */
  appHashAt(version: number): Uint8Array {
    this.ensureOpen();
    checkVersion(version);
    // Versions the marker does not hold yet: a group's, and one whose completion the disk refused.
    const unrecorded = this.unrecorded?.version === version ? this.unrecorded : this.grouping?.rows.find((r) => r.version === version);
    const h = unrecorded?.appHash ?? this.marker.appHashAt(version);
    if (h === undefined) throw new IavlError("VERSION_NOT_FOUND", `version ${version} was never committed by this multi-store`);
    return h;
  }

  /**
   * Prunes every store up to `version`, as {@link Tree.prune} does, one store after another. `keepEvery` defaults to
   * the `keepEvery` the multi-store was opened with, so that its snapshots stay; `onProgress` gets each store's
   * phases, named `<store>: <phase>`. The marker forgets the app hashes of the versions no store keeps.
   */
  async prune(version: number, options: PruneOptions = {}): Promise<Map<string, PruneResult>> {
    this.ensureOpen();
    checkVersion(version);
    checkObject(options, "the prune options");
    const { onProgress } = options;
    if (onProgress !== undefined && typeof onProgress !== "function") throw new IavlError("INVALID_ARGUMENT", "onProgress must be a function");
    const keepEvery = options.keepEvery ?? this.keepEvery;
    const out = new Map<string, PruneResult>();
    for (const [name, t] of this.trees) {
      const progress = onProgress === undefined ? undefined : (done: number, total: number, phase: string): void => onProgress(done, total, `${name}: ${phase}`);
      out.set(name, await t.prune(version, { keepEvery, onProgress: progress }));
    }
    // Snapshots kept by keepEvery keep their app hashes.
    const [first, ...rest] = [...this.trees.values()].map((t) => new Set(t.versions()));
    const kept = [...first!].filter((v) => v <= version && rest.every((s) => s.has(v)));
    this.marker.forget(version, this.lastVersion, kept);
    return out;
  }

  /** Closes every store (each returns once its threads stopped), then the marker. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      for (const t of this.trees.values()) t.close();
      // A completion the disk refused: recorded now if it can be, else by the next open, from the stores.
      const u = this.unrecorded;
      if (u !== undefined) {
        try {
          this.marker.complete(u.version, u.appHash);
        } catch {
          // The next open completes it: every store holds the version.
        }
      }
    } finally {
      this.marker.close();
    }
  }

  /** Throws `CLOSED` after {@link close}, and `CORRUPT` after a commit failed part-way. */
  private ensureOpen(): void {
    if (this.closed) throw new IavlError("CLOSED", "the multi-store is closed");
    if (this.failed !== undefined) {
      throw new IavlError("CORRUPT", `a commit failed part-way (${(this.failed as Error).message}); reopen to continue from the last whole version`, { cause: this.failed });
    }
  }
}
