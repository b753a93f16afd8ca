/**
 * How a committed version reaches the disk: its rows written inline (durability full, and a multi-store's stores),
 * appended to the commit journal and handed to the writer thread (normal), or handed to it alone (async), the WAL
 * checkpointer woken after it (unless another process checkpoints the WAL), and the tree's copies of its values let go once it
 * has landed, the one thing that comes back up from below.
 * @module
 */
import type { IavlError } from "../../base/errors.js";
import type { WriteTurn } from "../../base/write-turn.js";
import type { NodeSource, NodeTable } from "../../tree/node.js";
import type { CommitInput } from "../../tree/store-contract.js";
import type { StoreWriter } from "../../sqlite/store-writer.js";
import { boundWal, type WalCheckpoints } from "../../sqlite/wal.js";
import { UnlandedValues } from "./unlanded-values.js";
import { laterMark, type CheckpointStep } from "../../checkpoint/checkpoint-steps.js";
import { laterOrphans, versionRows } from "./version-rows.js";
import { WalCheckpointer } from "./wal-checkpointer.js";
import { queuedBytes, WriteQueue } from "./write-queue.js";
import { CommitJournal } from "../../sqlite/commit-journal.js";

/**
 * Bytes of journal past which it is emptied once every version in it has landed (between versions), and past which
 * a commit first waits for them to land: a journal only grows while the writer thread lags.
 */
const JOURNAL_CUT_BYTES = 32 * 2 ** 20;
const JOURNAL_MAX_BYTES = 256 * 2 ** 20;

/** How versions are written. */
export interface VersionWriterOptions {
  /** Land versions in a writer thread with this many in flight; undefined: write inline. */
  asyncQueue: number | undefined;
  /** With a writer thread: the commit journal's path, where each version is appended before it is handed over. */
  journal: string | undefined;
  /** Bytes of values that may be in flight to the writer thread. */
  inFlightBytes: number;
  busyTimeoutMs: number;
  /** "own": a checkpointer thread after commits, and the WAL's bound before them; "external": no checkpoint at all. */
  walCheckpoints: WalCheckpoints;
  /** Where this store's writes go before the prune thread's. */
  turn: WriteTurn;
  /** The snapshots automatic prunes keep: the writer thread marks their targets (`WriteTurn.askMark`). */
  keepEvery: number | undefined;
  /** Told of each version the writer thread lands, in order (not of versions written inline). */
  onLanded?: (version: number) => void;
}

/** Writes one store's versions, in order. */
export class VersionWriter {
  /** The background writer, with durability "async" or a journal, from the first write on. */
  private q: WriteQueue | undefined;
  /** The commit journal, with durability "normal" in a store of its own, from the first write on. */
  private journal: CommitJournal | undefined;
  /** Starts {@link q} and {@link journal}; undefined when versions are written inline. */
  private readonly startQueue: ((durable: number) => WriteQueue) | undefined;
  /**
   * The checkpointer thread; undefined until the first write, and always when another process checkpoints the WAL
   * (walCheckpoints "external").
   */
  private wal: WalCheckpointer | undefined;
  private readonly ownWal: boolean;
  private readonly busyTimeoutMs: number;
  private readonly values: UnlandedValues;
  /** The id the next leaves row gets. */
  private nextLeaf: number;
  /** The id the next page row gets. */
  private nextPage: number;
  private readonly turn: WriteTurn;
  /** True while a group of versions is open (see {@link beginGroup}). */
  private grouped = false;

  constructor(
    private readonly store: StoreWriter,
    private readonly file: string,
    t: NodeTable,
    o: VersionWriterOptions,
  ) {
    this.values = new UnlandedValues(t);
    this.nextLeaf = store.read.leaves.nextId();
    this.nextPage = store.read.pages.nextId();
    this.turn = o.turn;
    this.ownWal = o.walCheckpoints === "own";
    this.busyTimeoutMs = o.busyTimeoutMs;
    const landed = (v: number): void => {
      this.values.landed(v);
      o.onLanded?.(v);
    };
    const { asyncQueue, journal } = o;
    // At the first write, as the checkpointer: a store opened only to be read starts no thread.
    if (asyncQueue !== undefined) {
      this.startQueue = (durable) => {
        if (journal !== undefined) this.journal = new CommitJournal(journal);
        return (this.q = new WriteQueue(file, durable, asyncQueue, o.inFlightBytes, o.busyTimeoutMs, this.walOf()?.shared, o.turn, o.keepEvery, landed));
      };
    }
  }

  /** The background writer, once started: what it holds is in flight. */
  get queue(): WriteQueue | undefined {
    return this.q;
  }

  /**
   * Resolves when every version handed to the writer thread has landed, and then empties the journal if it is past
   * its cut size: between commits it is cut only when nothing is in flight, which a writer thread always behind
   * rarely allows, and it stood at 63-211 MiB after the 1M-key churn's flush.
   */
  async flush(): Promise<void> {
    await this.q?.flush();
    if (this.journal !== undefined && this.journal.bytes >= JOURNAL_CUT_BYTES) this.cutJournal(false);
  }

  /**
   * The checkpointer, started by the first write that needs it: a store opened only to be read starts no thread,
   * whose start-up (tens of milliseconds of CPU) would otherwise compete with its first reads on a small machine.
   */
  private walOf(): WalCheckpointer | undefined {
    if (this.ownWal) this.wal ??= new WalCheckpointer(this.file, this.busyTimeoutMs);
    return this.wal;
  }

  /** The tree's own copy of a value being set: valid until its version lands, when leaves drop their values. */
  copyValue(value: Uint8Array): Uint8Array {
    return this.values.copy(value);
  }

  /** The id the next page row gets. */
  get firstPage(): number {
    return this.nextPage;
  }

  /**
   * Writes `c`, with the step of a checkpoint that `stepOf` makes (given the id of the first page it may use) once
   * the version's leaves are numbered, if any; returns that step. Throws with nothing changed when it cannot.
   */
  write(src: NodeSource, c: CommitInput, stepOf: (firstPage: number) => CheckpointStep | undefined): CheckpointStep | undefined {
    const rows = versionRows(src, c, this.nextLeaf, () => stepOf(this.nextPage));
    try {
      this.values.seal(c.version, rows.leaves);
      const start = this.grouped ? undefined : this.startQueue;
      const bytes = start === undefined ? undefined : queuedBytes(rows.write);
      if (start !== undefined && bytes !== undefined) {
        const queue = this.q ?? start(c.version - 1);
        if (this.journal !== undefined && this.journal.bytes >= JOURNAL_CUT_BYTES) this.cutJournal(this.journal.bytes >= JOURNAL_MAX_BYTES);
        queue.push(rows.write, bytes, c.log.changes, this.journal);
      } else {
        if (!this.grouped) this.q?.drain();
        const wal = this.walOf();
        this.turn.owner(() => {
          // In a group the WAL was bounded when it began: no checkpoint can run inside its transaction.
          if (wal !== undefined && !this.grouped) boundWal(this.store.db, this.file, wal.framesLeft);
          this.store.writeVersion(rows.write);
        });
        if (!this.grouped) wal?.committed();
        // In a group too: the rows are read back through this connection, which sees its own transaction.
        this.values.landed(c.version);
      }
    } catch (e) {
      rows.undo();
      throw e;
    }
    this.nextLeaf += rows.write.leaves.length;
    this.nextPage += rows.pagesUsed;
    return rows.step;
  }

  /**
   * Empties the journal when every version in it has landed, first waiting for them when `wait`; throws the writer
   * thread's failure, if any.
   */
  private cutJournal(wait: boolean): void {
    if (wait) this.queue!.drain();
    else if (this.queue!.inFlight().length > 0) return;
    this.journal!.cut();
  }

  /**
   * Opens a group: the versions written until {@link endGroup} land in one transaction, inline, once the writer
   * thread (if any) has landed what it holds. Background writers wait meanwhile, as for one commit.
   */
  beginGroup(): void {
    this.queue?.drain();
    const wal = this.walOf();
    this.turn.enter();
    try {
      if (wal !== undefined) boundWal(this.store.db, this.file, wal.framesLeft);
      this.store.beginGroup();
    } catch (e) {
      this.turn.leave();
      throw e;
    }
    this.grouped = true;
  }

  /** Lands the group's versions (`land`) or drops them; see {@link StoreWriter.endGroup}. */
  endGroup(land: boolean): void {
    if (!this.grouped) return;
    this.grouped = false;
    try {
      this.store.endGroup(land);
    } finally {
      this.turn.leave();
    }
    if (land) this.wal?.committed();
  }

  /**
   * Writes the last step of a checkpoint of stored versions by itself (inline: the writer thread, if any, has landed
   * every version), making its version a checkpoint; throws with nothing changed when it cannot.
   */
  checkpoint(step: CheckpointStep): void {
    if (step.completes === undefined) throw new Error("a checkpoint written by itself must end the walk");
    const mark = laterMark(step.completes);
    try {
      this.turn.owner(() => this.store.writeCheckpoint(step.batch.rows, step.batch.pages, laterOrphans(step, undefined), mark));
    } catch (e) {
      step.undo();
      throw e;
    }
    this.nextPage += step.batch.pagesUsed;
  }

  /** The newest of the versions up to `latest` on disk (one written inline is on disk on return). */
  durable(latest: number): number {
    const oldest = this.queue?.inFlight()[0];
    return oldest === undefined ? latest : oldest - 1;
  }

  /** True once `version` is on disk (false when the writer thread failed first). */
  landed(version: number): boolean {
    return this.queue === undefined || this.queue.landed(version);
  }

  /**
   * Lands what is queued and stops the writer and checkpointer threads. Returns a failure of the background writer
   * that no caller has been told of yet.
   */
  close(): IavlError | undefined {
    let failed: IavlError | undefined;
    try {
      failed = this.queue?.close();
      return failed;
    } finally {
      // A journal whose versions did not all land stays for the next writer to land them.
      this.journal?.close(failed === undefined && this.queue!.inFlight().length === 0);
      this.wal?.close();
    }
  }
}
