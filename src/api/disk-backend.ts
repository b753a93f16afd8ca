/**
 * The backend of `Tree.open`, and the one owner of everything an open store holds: its connection, its writer
 * lock, the working set with its writer thread, and the prune pool. They are closed in that order's reverse: the
 * pruner stops at a step boundary, the writer thread lands what is queued, the connection closes, and only then is
 * the lock released, so that the next writer never meets a thread of this one still writing.
 * @module
 */
import { fromSqlite, IavlError } from "../base/errors.js";
import { WriteTurn } from "../base/write-turn.js";
import type { ReadonlyTree } from "../tree/readonly-tree.js";
import { DEFAULT_BUSY_TIMEOUT_MS } from "../sqlite/connection.js";
import { rollbackStore } from "../sqlite/rollback.js";
import { openStoreFolder, type OpenFolder } from "../store/folder.js";
import { WorkingSet } from "../store/write/working-set.js";
import { Pruner, type PruneResult } from "../prune/pruner.js";
import type { Backend, PruneOptions } from "./backend.js";
import type { ResolvedOpenOptions } from "./options.js";
import type { CommitInput, HistoryQuery, KeyChange, KeyHistory, KeyOp, Latest } from "../tree/store-contract.js";

/**
 * The share of the file an automatic prune leaves free: the commits that follow fill those pages again, so returning
 * them would only move pages (an explicit prune returns all of them).
 */
const AUTO_PRUNE_KEEP_FREE = 0.25;

/** What a multi-store tells its store's backend (see {@link DiskBackend.open}). */
interface MultiStoreOpen {
  /** Land each version inline, in `commit()`, with durability "normal" too (no commit journal). */
  inline?: boolean;
  rollbackTo?: number;
  keeps?: () => number;
}

/** The persistent {@link Backend}. */
export class DiskBackend implements Backend {
  readonly logsOps = true;
  private pruner: Pruner | undefined;
  /** The newest automatic prune target the keepRecent policy wants, and the newest asked of the pruner. */
  private autoWanted = 0;
  private autoAsked = 0;
  /** Prunes asked, explicit and automatic: see {@link pruneEpoch}. */
  private pruneAsks = 0;
  private closed = false;
  /** While a group is open: the last version committed in it (0: none yet). */
  private grouped: number | undefined;

  private constructor(
    private readonly folder: OpenFolder,
    private readonly set: WorkingSet,
    private readonly options: ResolvedOpenOptions,
    /** Shared by the working set's writes and the prune thread's, so that commits go first. */
    private readonly turn: WriteTurn,
    private readonly keeps: (() => number) | undefined,
  ) {}

  /**
   * Opens the store in `dir` under its writer lock. A multi-store's store gets `multi`: `rollbackTo`, the version
   * whose successors are deleted first, under the same lock (bringing the store back to its last whole version), and
   * `keeps`, the folder's last whole version at any moment, which no prune may remove (see {@link pruneCeiling}).
   */
  static open(dir: string, options: ResolvedOpenOptions, multi: MultiStoreOpen = {}): DiskBackend {
    try {
      return DiskBackend.openFolder(dir, options, multi);
    } catch (e) {
      throw fromSqlite(e, `${dir}: opening the store`);
    }
  }

  private static openFolder(dir: string, options: ResolvedOpenOptions, multi: MultiStoreOpen): DiskBackend {
    const { rollbackTo, keeps } = multi;
    const folder = openStoreFolder(dir, {
      shardSize: options.shardSize,
      sync: options.durability === "full" ? "full" : "normal",
      busyTimeoutMs: options.busyTimeoutMs,
    });
    try {
      if (rollbackTo !== undefined) rollbackStore(folder.db, rollbackTo);
      const turn = new WriteTurn();
      // A multi-store's stores land inline: its commit marker records versions every store holds.
      const journal = options.durability === "normal" && (options.commitJournal ?? options.walCheckpoints === "own") && !multi.inline ? folder.journal : undefined;
      let backend: DiskBackend | undefined;
      const set = new WorkingSet(folder.db, folder.file, {
        checkpointInterval: options.checkpointInterval,
        checkpointStepRows: options.checkpointStepRows,
        memoryBudgetMiB: options.memoryBudgetMiB,
        asyncQueue: options.durability === "async" || journal !== undefined ? options.asyncQueue : undefined,
        journal,
        snapshotEvery: options.keepEvery,
        keepRecent: options.keepRecent,
        busyTimeoutMs: options.busyTimeoutMs,
        walCheckpoints: options.walCheckpoints,
        turn,
        pruneEpoch: () => backend?.pruneEpoch(),
        onLanded: () => backend?.askAutoPrune(),
      });
      backend = new DiskBackend(folder, set, options, turn, keeps);
      return backend;
    } catch (e) {
      folder.db.close();
      folder.lock.release();
      throw e;
    }
  }

  /** Deletes every version after `version` from the store in `dir` (under its lock); returns how many went. */
  static rollback(dir: string, version: number): number {
    const { db, lock } = openStoreFolder(dir, { shardSize: 1000, sync: "full", busyTimeoutMs: DEFAULT_BUSY_TIMEOUT_MS });
    try {
      return rollbackStore(db, version);
    } finally {
      db.close();
      lock.release();
    }
  }

  get src(): WorkingSet["src"] {
    return this.set.src;
  }

  get valueOf(): WorkingSet["views"]["valueOf"] {
    return this.set.views.valueOf;
  }

  get opened(): Latest {
    return this.set.opened;
  }

  copyValue(value: Uint8Array): Uint8Array {
    return this.set.copyValue(value);
  }

  committedValue(key: Uint8Array): Uint8Array | undefined {
    return this.set.committedValue(key);
  }

  commit(c: CommitInput): void {
    this.set.commit(c);
    // A prune of a group's versions waits for them to land: the prune thread's connection cannot see them before.
    if (this.grouped !== undefined) this.grouped = c.version;
    else this.autoPrune(c.version);
  }

  beginGroup(): void {
    this.set.beginGroup();
    this.grouped = 0;
  }

  endGroup(land: boolean): void {
    const last = this.grouped ?? 0;
    this.grouped = undefined;
    this.set.endGroup(land);
    if (land && last > 0) this.autoPrune(last);
  }

  view(version: number, alive: () => void): ReadonlyTree {
    return this.set.views.view(version, alive);
  }

  changes(version: number, alive: () => void): Iterable<KeyChange> {
    return this.set.views.changes(version, alive);
  }

  operations(version: number, alive: () => void): KeyOp[] {
    return this.set.views.operations(version, alive);
  }

  history(key: Uint8Array, q: HistoryQuery, latest: number): KeyHistory {
    return this.set.views.history(key, q, latest);
  }

  versions(): number[] {
    return this.set.views.versions();
  }

  async flush(): Promise<void> {
    await this.set.flush();
  }

  async prune(upTo: number, opts: PruneOptions): Promise<PruneResult> {
    // Pruning reads and rewrites the store: what is still queued for it must land first, and the checkpoint being
    // written end, so that the versions it may remove are not ones whose checkpoint has yet to end.
    await this.set.flush();
    if (this.closed) throw new IavlError("CLOSED", "the tree is closed");
    this.set.endCheckpoint();
    this.pruneAsks++;
    return this.prunerOf().prune(Math.min(upTo, this.pruneCeiling()), opts.keepEvery, opts.onProgress);
  }

  /**
   * The newest version a prune asked now may name. A prune keeps the store's latest version, which for a
   * multi-store's store may be one the folder has yet to record whole (its commit is under way in the other stores,
   * or a group's has yet to land): a crash then brings the store back to the folder's last whole version, which must
   * still be there. Pruning up to the version before it keeps it, and removes no more than asked once it is whole.
   */
  private pruneCeiling(): number {
    return this.keeps === undefined ? Number.MAX_SAFE_INTEGER : this.keeps() - 1;
  }

  /**
   * The prunes asked of this store so far, or undefined while one runs. Only this writer's prunes remove versions
   * while it holds the lock, so a version whose read began with the same count is still kept.
   */
  private pruneEpoch(): number | undefined {
    return this.pruner === undefined || this.pruner.idle() ? this.pruneAsks : undefined;
  }

  private prunerOf(): Pruner {
    this.pruner ??= new Pruner(
      this.folder.file,
      this.options.busyTimeoutMs,
      this.turn,
      this.options.walCheckpoints === "own",
      this.options.keepRecent === undefined
        ? undefined
        : { keepEvery: this.options.keepEvery, keepFree: AUTO_PRUNE_KEEP_FREE, onError: (e) => this.report(e) },
    );
    return this.pruner;
  }

  /**
   * Asks for a background prune when the keepRecent policy wants one. The prune thread takes the newest target
   * whenever it is free, so commits never wait for it and never queue one prune behind another; a failed one is
   * reported to `onBackgroundError` and tried again after the next commit.
   */
  private autoPrune(version: number): void {
    const keep = this.options.keepRecent;
    if (keep === undefined) return;
    const target = Math.min(version - keep, this.pruneCeiling());
    // In steps of a twentieth of the window: a prune running takes a newer target's versions in one short
    // transaction, and one that starts for so few has little to do but that (a tenth let 123 versions be kept for
    // keepRecent 100 under the scale churn, with the versions still landing).
    if (target < 1 || target - this.autoWanted < Math.max(1, Math.floor(keep / 20))) return;
    this.autoWanted = target;
    this.askAutoPrune();
  }

  /**
   * Asks the pruner for the wanted target as far as versions have landed, and again as each lands: the policy applied
   * to the newest landed version. The prune thread sees only what is on disk, and a checkpoint spread over commits
   * ends in a version that must land before a prune may reach the checkpoint's own (see `WorkingSet.endBy`).
   */
  askAutoPrune(): void {
    const target = Math.min(this.autoWanted, this.set.durable - (this.options.keepRecent ?? 0));
    if (target <= this.autoAsked || this.closed) return;
    this.autoAsked = target;
    this.pruneAsks++;
    this.prunerOf().autoTo(target);
    // Asked of the prune thread first: a reader that saw no prune asked saw none marked either.
    this.turn.askMark(target);
  }

  private report(error: IavlError): void {
    const to = this.options.onBackgroundError;
    if (to !== undefined) to(error);
    else process.emitWarning(`iavlite: background work failed: ${error.code}: ${error.message}`);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      // A prune cut short is safe: every step can be run again.
      this.pruner?.close();
      // A close does not throw what failed in the background: it is reported as other background failures are.
      const unseen = this.set.close();
      if (unseen !== undefined) this.report(unseen);
    } finally {
      try {
        this.folder.db.close();
      } finally {
        this.folder.lock.release();
      }
    }
  }
}
