/**
 * The owner's side of durability "async": `commit()` hands each version to the background writer thread and
 * returns; a bounded queue makes it wait only when the writer falls `capacity` versions behind.
 * @module
 */
import { MessageChannel, receiveMessageOnPort, type MessagePort, type Worker } from "node:worker_threads";
import { latin1 } from "../../base/bytes.js";
import { IavlError, type ErrorCode } from "../../base/errors.js";
import { FIRST_SLOT, postMoving, ThreadChannel } from "../../base/thread-channel.js";
import type { WriteTurn } from "../../base/write-turn.js";
import type { Change } from "../../tree/version-log.js";
import { packWrite, writeBytes, type PackedWrite, type SpareBuffers } from "../../sqlite/packed-write.js";
import type { VersionWrite } from "../../sqlite/rows.js";
import type { CommitJournal } from "../../sqlite/commit-journal.js";

/** Slots of the channel to the writer thread: the newest durable version, … */
export const DURABLE = FIRST_SLOT;
/** … 1 once a write failed (nothing later lands, so that versions stay in order, until the owner asks to retry). */
export const FAILED = FIRST_SLOT + 1;
const SLOTS = FIRST_SLOT + 2;

/** What the owner passes to the writer thread. */
export interface WriterThreadData {
  file: string;
  busyTimeoutMs: number;
  /**
   * The WAL checkpointer's slots, to wake it after each version; undefined when another process checkpoints the WAL
   * (walCheckpoints "external"): the thread then never checkpoints either, not even past the WAL's bound.
   */
  walSlots: SharedArrayBuffer | undefined;
  /** The store's {@link WriteTurn} counter: the thread's writes go before the prune thread's. */
  turn: SharedArrayBuffer;
  /** The snapshots the automatic prunes it marks keep (`keepEvery`). */
  keepEvery: number | undefined;
  /** Where failures are reported, so that a blocked owner can read them synchronously. */
  errors: MessagePort;
  /** Where the buffers of each version written go back, for later versions to be packed into. */
  returns: MessagePort;
}

/** A failure as the writer thread reports it. */
export interface WriterFailure {
  version: number;
  message: string;
  code: ErrorCode | undefined;
}

/**
 * Returned buffers of each kind kept for reuse; the rest are left to the collector. Buffers are handed back rather
 * than dropped by the writer because the writer's heap is small and rarely collected, so the backing stores of
 * buffers it had dropped stayed allocated for many versions.
 */
const SPARES = 2;

/**
 * The most bytes one queued version carries. A larger one (a checkpoint that eviction asked for, past 1M keys: tens of
 * thousands of page rows) is written inline once the writer thread has landed what it holds: packed for the thread,
 * its buffer stayed allocated until the next full collection while the next such checkpoint made another, and
 * growing to 4M keys peaked at 1,091 MiB with 274 MiB of them (docs/benchmarks.md).
 */
const VERSION_MOST_BYTES = 16 * 2 ** 20;

/**
 * The bytes `w` carries in flight, counted against the queue's bound; undefined when it is too large to queue and is
 * to be written inline (see {@link VERSION_MOST_BYTES}).
 */
export function queuedBytes(w: VersionWrite): number | undefined {
  const n = writeBytes(w);
  return n <= VERSION_MOST_BYTES ? n : undefined;
}

/** A version handed to the writer but perhaps not yet on disk, with what reads need meanwhile. */
interface Queued {
  version: number;
  /** Bytes it carries, counted against the queue's bound until it lands. */
  bytes: number;
  changes: Map<string, Change>;
}

/** Queue of versions in flight to the writer thread. */
export class WriteQueue {
  private readonly ch: ThreadChannel & { readonly worker: Worker };
  private readonly errors = new MessageChannel();
  private readonly returns = new MessageChannel();
  private readonly spares: SpareBuffers = { nums: [], bytes: [] };
  private readonly queued: Queued[] = [];
  private failure: IavlError | undefined;
  /** True once {@link failure} was thrown to a caller. */
  private told = false;
  /** Bytes of the versions in {@link queued}. */
  private bytes = 0;
  /** Reasons the thread holds the process open: versions in flight (one, however many), and each flush waiting. */
  private holds = 0;
  /** True while {@link holdWhileInFlight} runs. */
  private watching = false;
  private closed = false;

  constructor(
    file: string,
    durable: number,
    private readonly capacity: number,
    /** Bytes (keys, values, hashes) that may be in flight before `commit()` waits. */
    private readonly maxBytes: number,
    busyTimeoutMs: number,
    walSlots: SharedArrayBuffer | undefined,
    turn: WriteTurn,
    keepEvery: number | undefined,
    /** Told of each version once it is on disk, in order. */
    private readonly onLanded: (version: number) => void,
  ) {
    const data: WriterThreadData = { file, busyTimeoutMs, walSlots, turn: turn.buffer, keepEvery, errors: this.errors.port2, returns: this.returns.port2 };
    const failed = (e: Error): void => {
      this.failure ??= new IavlError("CORRUPT", `the background writer stopped: ${e.message}; versions after ${this.durable} were not stored`, { cause: e });
    };
    // The durable version is set before the thread starts: it numbers the versions it lands from it.
    this.ch = ThreadChannel.start(import.meta.url, "writer-thread", SLOTS, data, [this.errors.port2, this.returns.port2], failed, [[DURABLE, durable]]);
  }

  /** The newest version on disk. */
  get durable(): number {
    return this.ch.slots.get(DURABLE);
  }

  /**
   * Hands `w`, carrying `bytes` ({@link queuedBytes}), to the writer, first waiting for room in the queue (at most
   * `capacity` versions and `maxBytes` bytes in flight) and appending it to `journal`, if any. The version goes
   * packed into two buffers that are transferred, not cloned.
   */
  push(w: VersionWrite, bytes: number, changes: Map<string, Change>, journal?: CommitJournal): void {
    this.check();
    this.takeReturned();
    for (let oldest = this.queued[0]; oldest !== undefined; oldest = this.queued[0]) {
      if (this.queued.length < this.capacity && this.bytes + bytes <= this.maxBytes) break;
      this.waitFor(oldest.version);
    }
    const packed = packWrite(w, this.spares, bytes);
    // Last of what may fail, so that a version the caller is told failed is in no journal.
    journal?.append(packed);
    postMoving(this.ch.worker, { packed }, [packed.nums, packed.bytes]);
    this.queued.push({ version: w.version.version, bytes, changes });
    this.bytes += bytes;
    if (!this.watching) void this.holdWhileInFlight();
  }

  /** The newest queued change of `key` not yet durable, if any. */
  pending(key: Uint8Array): Change | undefined {
    this.trim();
    if (this.queued.length === 0) return undefined;
    const id = latin1(key);
    for (let i = this.queued.length - 1; i >= 0; i--) {
      const c = this.queued[i]!.changes.get(id);
      if (c !== undefined) return c;
    }
    return undefined;
  }

  /** Blocks until everything queued is durable; throws the writer's failure if it failed. */
  drain(): void {
    const last = this.queued[this.queued.length - 1];
    if (last !== undefined) this.waitFor(last.version);
  }

  /** Blocks until `version` is durable; throws the writer's failure if it failed. */
  waitFor(version: number): void {
    if (!this.landed(version)) this.check();
  }

  /** Resolves when everything queued is durable, without blocking the event loop. */
  async flush(): Promise<void> {
    const last = this.queued[this.queued.length - 1];
    if (last === undefined) return this.check();
    // The worker is unref'd so that it never holds a process open by itself; while someone awaits, it must.
    this.hold(1);
    try {
      for (let d = this.durable; d < last.version; d = this.durable) {
        this.check();
        await this.ch.slots.waitAsync(DURABLE, d, 1000);
      }
      this.trim();
    } finally {
      this.hold(-1);
    }
  }

  /**
   * Holds the process open until every version in flight is on disk (or the writer failed): `commit()` returned, so
   * a script that ends without `flush()` or `close()` must find its versions stored, as with durability normal. With
   * nothing in flight the thread is idle and lets the process go.
   */
  private async holdWhileInFlight(): Promise<void> {
    this.watching = true;
    this.hold(1);
    try {
      for (;;) {
        if (this.closed) return;
        this.trim();
        this.check(false);
        if (this.queued.length === 0 || this.failure !== undefined) return;
        await this.ch.slots.waitAsync(DURABLE, this.durable, 1000);
      }
    } finally {
      this.hold(-1);
      this.watching = false;
    }
  }

  /** Counts a reason to hold the process open (`by` 1) or one gone (-1); the thread is ref'd while any is left. */
  private hold(by: 1 | -1): void {
    this.holds += by;
    if (this.holds === 0) this.ch.worker.unref();
    else if (by === 1 && this.holds === 1) this.ch.worker.ref();
  }

  /**
   * True once `version` is durable; false when the writer failed first (the failure is thrown at the next commit). A
   * version never handed to the writer (written inline, in a group) is taken as durable.
   */
  landed(version: number): boolean {
    for (;;) {
      // Read before the queue is trimmed: a version landing after it wakes the wait at once.
      const d = this.durable;
      this.trim();
      const oldest = this.queued[0]?.version;
      if (oldest === undefined || version < oldest) return true;
      this.check(false);
      if (this.failure !== undefined) return false;
      this.ch.slots.wait(DURABLE, d, 1000);
    }
  }

  /**
   * Lands everything queued (unless the writer failed), then stops the writer thread and returns once it has closed
   * its connection, so that the store's lock is released with nothing left writing: however long a version waits for
   * a lock, a thread that may still write must not outlive its store's lock. Returns the writer's failure when no
   * caller has been told of it yet, rather than throw it from a close.
   */
  close(): IavlError | undefined {
    this.closed = true;
    if (this.told) this.retry();
    const last = this.queued[this.queued.length - 1];
    if (last !== undefined) this.landed(last.version);
    // The thread closes between versions, when it reads its messages (an exit event cannot arrive meanwhile).
    this.ch.worker.postMessage({ close: true });
    this.ch.close();
    this.returns.port1.close();
    this.check(false);
    return this.told ? undefined : this.failure;
  }

  /** Versions handed to the writer and not yet on disk, oldest first. */
  inFlight(): number[] {
    this.trim();
    return this.queued.map((q) => q.version);
  }

  /** Keeps the shortest of the buffers the writer handed back (read synchronously: the event loop may not turn). */
  private takeReturned(): void {
    for (let m = receiveMessageOnPort(this.returns.port1); m !== undefined; m = receiveMessageOnPort(this.returns.port1)) {
      const p = m.message as PackedWrite;
      this.spares.nums.push(p.nums);
      this.spares.bytes.push(p.bytes);
    }
    for (const list of [this.spares.nums, this.spares.bytes] as Array<Array<{ length: number }>>) {
      list.sort((a, b) => a.length - b.length).length = Math.min(list.length, SPARES);
    }
  }

  private trim(): void {
    const d = this.durable;
    while (this.queued.length > 0 && this.queued[0]!.version <= d) {
      const q = this.queued.shift()!;
      this.bytes -= q.bytes;
      this.onLanded(q.version);
    }
  }

  /**
   * Throws the writer's failure, if any (`raise` false: only records it). A failure already thrown once is not
   * thrown again: the writer is asked to land the versions it holds once more (space may have returned).
   */
  private check(raise = true): void {
    if (this.failure !== undefined && this.told && raise) this.retry();
    if (this.failure === undefined && (this.ch.slots.get(FAILED) !== 0 || this.ch.isGone)) {
      const m = receiveMessageOnPort(this.errors.port1)?.message as WriterFailure | undefined;
      this.trim();
      const [first, last] = [this.queued[0]?.version, this.queued[this.queued.length - 1]?.version];
      const which = first === last ? `version ${first} is` : `versions ${first}–${last} are`;
      const held = first === undefined ? "" : `; ${which} not stored yet, and the next commit() or flush() lands them (a reopen goes on from version ${this.durable})`;
      const why = `the background writer failed at version ${m?.version ?? "?"}: ${m?.message ?? "it stopped"}${this.ch.isGone ? `; versions after ${this.durable} were not stored (reopen the store to go on from there)` : held}`;
      this.failure = new IavlError(m?.code ?? "CORRUPT", why);
    }
    if (this.failure !== undefined && raise) {
      this.told = true;
      throw this.failure;
    }
  }

  /** Asks the writer to land the versions it holds since its failure, which its caller was told of. */
  private retry(): void {
    // A thread that is gone holds nothing.
    if (this.ch.isGone) return;
    this.failure = undefined;
    this.told = false;
    this.ch.slots.set(FAILED, 0);
    this.ch.worker.postMessage({ retry: true });
  }
}
