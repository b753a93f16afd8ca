/**
 * The persistent store of a writer: the tree's working set in memory over a store on disk. Leaves and the operation
 * log are written every version, branch nodes at checkpoints; clean nodes are evicted to stay within the memory
 * budget; reopening loads the last checkpoint and replays the log since, checking the root hash.
 * @module
 */
import type { IavlError } from "../../base/errors.js";
import { NONE } from "../../tree/node.js";
import type { CommitInput, Latest } from "../../tree/store-contract.js";
import type { Connection } from "../../sqlite/connection.js";
import { StoreWriter } from "../../sqlite/store-writer.js";
import { CheckpointSchedule } from "../../checkpoint/schedule.js";
import { CheckpointSteps } from "../../checkpoint/checkpoint-steps.js";
import { NodeLoader } from "../node-loader.js";
import { MemoryBudget } from "./memory-budget.js";
import { VersionWriter, type VersionWriterOptions } from "./version-writer.js";
import { reopenLatest } from "./reopen.js";
import { WriterViews } from "./writer-views.js";

/** How a working set writes and how much memory it may use. */
export interface WorkingSetOptions {
  /** Versions between checkpoints. */
  checkpointInterval: number;
  /** The fewest rows a step of a checkpoint writes. */
  checkpointStepRows: number;
  /** Memory for tree nodes, in MiB. */
  memoryBudgetMiB: number;
  /** Land versions in a writer thread (durability "async", or "normal" with a journal) with this many in flight; undefined: write inline. */
  asyncQueue: number | undefined;
  /** With a writer thread: the commit journal's path (durability "normal"). */
  journal: string | undefined;
  /** Versions that are multiples of this are committed as checkpoints (snapshots kept by pruning). */
  snapshotEvery: number | undefined;
  /** Versions automatic prunes keep, if they run: a checkpoint ends before a prune could reach its version. */
  keepRecent: number | undefined;
  busyTimeoutMs: number;
  /** Who checkpoints the WAL: this store ("own") or another process ("external"). */
  walCheckpoints: VersionWriterOptions["walCheckpoints"];
  /** Where this store's writes go before the prune thread's. */
  turn: VersionWriterOptions["turn"];
  /** Told of each version the writer thread lands, in order. */
  onLanded?: VersionWriterOptions["onLanded"];
  /** The owner's count of prunes asked, undefined while one runs (see {@link WriterViews}); none: every read checks. */
  pruneEpoch?: () => number | undefined;
}

/** Spine rows a commit loads while the spine is cold: ~100 ms of reads; 28 commits warm a 10M-key tree's spine. */
const WARM_ROWS = 32768;

/** The working set of one writer over its store file. */
export class WorkingSet {
  readonly src: NodeLoader;
  /** The last committed version at open (0 for none) and its root. */
  readonly opened: Latest;
  /** Reads of the committed versions. */
  readonly views: WriterViews;
  /** The last committed version, whose tree is the live one. */
  private live: Latest;
  private readonly schedule: CheckpointSchedule;
  private readonly checkpoints: CheckpointSteps;
  private readonly budget: MemoryBudget;
  private readonly writer: VersionWriter;
  private readonly options: WorkingSetOptions;
  /** True once every spine row of the live tree is in memory (it then stays: eviction keeps the spine). */
  private spineWarm = false;

  constructor(db: Connection, file: string, options: WorkingSetOptions) {
    this.options = options;
    const store = new StoreWriter(db);
    const read = store.read;
    this.src = new NodeLoader(read);
    // Reopen: the last checkpoint, then the log since, checked against the stored root hash.
    this.opened = reopenLatest(store, this.src);
    const root = this.opened.root;
    this.live = this.opened;
    this.schedule = CheckpointSchedule.resume(read.versions, this.opened.version, options.checkpointInterval, options.snapshotEvery);
    // The last checkpoint's pages, and about as many spine rows above them.
    const lastRows = (): number => 2 * read.pages.writtenBy(this.schedule.lastWritten);
    this.checkpoints = new CheckpointSteps(this.src, spreadOf(options.checkpointInterval), lastRows, options.checkpointStepRows);
    this.budget = new MemoryBudget(options.memoryBudgetMiB, root === NONE ? 0 : this.src.t.size(root));
    this.writer = new VersionWriter(store, file, this.src.t, {
      asyncQueue: options.asyncQueue,
      journal: options.journal,
      // Values in flight to the writer thread count against the memory budget: a quarter of it at most.
      inFlightBytes: (options.memoryBudgetMiB * 2 ** 20) / 4,
      busyTimeoutMs: options.busyTimeoutMs,
      walCheckpoints: options.walCheckpoints,
      turn: options.turn,
      keepEvery: options.snapshotEvery,
      onLanded: options.onLanded,
    });
    this.views = new WriterViews(read, this.src, () => this.writer.queue, () => this.live, options.pruneEpoch);
  }

  /** The tree's own copy of a value being set: valid until its version is written, when leaves drop their values. */
  copyValue(value: Uint8Array): Uint8Array {
    return this.writer.copyValue(value);
  }

  /** The value of `key` in the last committed version, in an array of the caller's own. */
  committedValue(key: Uint8Array): Uint8Array | undefined {
    const c = this.writer.queue?.pending(key);
    if (c !== undefined) return c.value?.slice();
    // A row read from SQLite is already a fresh array.
    return this.views.latest(key);
  }

  /** Persists a version; throws with nothing changed when it cannot. */
  commit(c: CommitInput): void {
    const t = this.src.t;
    // After a reopen the spine comes back a bounded batch a commit, where it fits the budget: a change whose path
    // crossed its cold part read those rows one by one. Before the write, so that a damaged row refuses the commit.
    if (!this.spineWarm && c.root !== NONE && this.budget.holdsSpine(t.size(c.root))) {
      const before = t.live;
      this.spineWarm = this.src.warmSpine(c.root, WARM_ROWS);
      this.budget.warmed(t.live - before);
    }
    const begins = this.checkpoints.pending === undefined;
    const due = this.schedule.due(c.version);
    // The nodes a checkpoint keeps for its walk count against the budget; past a quarter of it, the walk ends now, and
    // so it does when eviction asked for a checkpoint while one was being written, or asked for one because memory is
    // over the budget: the nodes the walk has yet to store are dirty, and cannot be evicted until it ends (growing to
    // 4M keys at 512 MiB, 50 commits of it took the node table to twice the budget and RSS to 1,443 MiB; growing at 10M
    // keys, one more commit took it from 1.1 to 1.25 times the budget). A snapshot's checkpoint ends in its own commit:
    // one a crash cut short would never be made again, and the next prune would drop the snapshot.
    const every = this.options.snapshotEvery;
    const now =
      this.budget.tooManyHeld(this.checkpoints.held) ||
      (!begins && this.schedule.asked) ||
      this.schedule.askedNow ||
      (every !== undefined && c.version % every === 0);
    const endsNow = (from: number): boolean => now || c.version >= this.endBy(from);
    const step = this.writer.write(this.src, c, (firstPage) => this.checkpoints.next(c.version, c.root, due, firstPage, endsNow));
    this.live = { version: c.version, root: c.root };
    if (step !== undefined) {
      if (begins) this.schedule.written(c.version);
      this.checkpoints.written(step);
    }
    // The nodes this version replaced are in no tree this writer keeps: views of older versions read rebuilt trees, a
    // walk still going over the previous one holds them through its pin, and the checkpoint being written keeps those
    // it may still read.
    this.checkpoints.retire(c.orphans, c.version);
    const held = this.checkpoints.held;
    const over = this.budget.committed(t, c.root, this.src.loads, held, step?.batch.pagesUsed ?? 0);
    this.src.loads = 0;
    // Evicted nodes are loaded back from disk, so they must be there first. The version is committed by now: a
    // writer that failed meanwhile refuses the next commit instead, so that this one stays whole.
    if (!over || !this.writer.landed(c.version)) return;
    const ask = this.budget.evict(t, c.root, held);
    if (ask !== "no") this.schedule.askNext(ask === "now");
  }

  /** Opens a group of commits that land together (see {@link VersionWriter.beginGroup}). */
  beginGroup(): void {
    this.writer.beginGroup();
  }

  /** Lands the group's versions (`land`) or drops them. */
  endGroup(land: boolean): void {
    this.writer.endGroup(land);
  }

  /**
   * The last commit that a checkpoint of version `from` may end in: half an interval on, before any automatic prune
   * could reach its version, and before the next snapshot version, which must be a checkpoint of its own.
   */
  private endBy(from: number): number {
    const { checkpointInterval, keepRecent, snapshotEvery } = this.options;
    let by = from + spreadOf(checkpointInterval);
    if (keepRecent !== undefined) by = Math.min(by, from + keepRecent - 1);
    if (snapshotEvery !== undefined) by = Math.min(by, (Math.floor(from / snapshotEvery) + 1) * snapshotEvery - 1);
    return by;
  }

  /** The newest committed version on disk, where other connections (a prune's, other processes') see it. */
  get durable(): number {
    return this.writer.durable(this.live.version);
  }

  /** Resolves when every committed version is on disk. */
  async flush(): Promise<void> {
    await this.writer.flush();
  }

  /**
   * Writes the rest of the checkpoint being written, if any, by itself (every committed version must be on disk): a
   * prune may remove versions up to the newest, and must not remove one whose checkpoint has yet to end.
   */
  endCheckpoint(): void {
    const step = this.checkpoints.rest(this.writer.firstPage);
    if (step === undefined) return;
    this.writer.checkpoint(step);
    this.checkpoints.written(step);
  }

  /**
   * Lands what is queued and stops the writer and checkpointer threads; the connection is the owner's to close.
   * Returns a failure of the background writer that no caller has been told of yet.
   */
  close(): IavlError | undefined {
    this.views.clear();
    const failed = this.writer.close();
    if (failed === undefined) this.checkpointLatest();
    return failed;
  }

  /**
   * Writes the last version's unstored branches, unless it is a checkpoint already: a reopen then loads its root
   * instead of replaying every version since the last checkpoint (up to an interval of them, seconds at millions of
   * keys). Best effort: when it cannot, the store stays as it was and a reopen replays.
   */
  private checkpointLatest(): void {
    try {
      this.endCheckpoint();
      const { version, root } = this.live;
      if (version === 0 || root === NONE || !this.schedule.needsClose(version)) return;
      const step = this.checkpoints.next(version, root, true, this.writer.firstPage, () => true);
      if (step === undefined) return;
      this.writer.checkpoint(step);
      this.checkpoints.written(step);
    } catch {
      // Best effort, as the comment above says.
    }
  }
}

/**
 * Commits a checkpoint's rows are spread over: half the interval, so that one ends well before the next is due, and
 * at most {@link MAX_SPREAD}. The nodes later versions replace that the walk may still read stay in memory until it
 * ends or writes their pages ahead (checkpoint-steps.ts): at 20 commits a 1M churn's steps were 4× its median commit.
 */
function spreadOf(interval: number): number {
  return Math.min(MAX_SPREAD, Math.floor(interval / 2));
}

const MAX_SPREAD = 50;
