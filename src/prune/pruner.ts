/**
 * Pruning in the background: one thread per store (prune-thread.ts, a worker thread for the life of the store) runs
 * each prune whole, step after step, each step on a connection of its own and in short transactions, while the
 * owner goes on committing.
 *
 * 1. mark: version rows below the first kept version are deleted (readers get VERSION_PRUNED from then on) and the
 *    checkpoint that replays of kept versions start from is recorded as the base.
 * 2. leaves: for each version up to the base, the rows its changes superseded are deleted (and, when snapshots were
 *    dropped, a sweep of every key finds the rows they alone read; see plan.ts).
 * 3. branches: the branch rows that versions up to the base replaced are deleted, but for those a kept snapshot's
 *    tree holds (see sqlite/orphaned-branches.ts).
 * 4. copy (only for shards of a store made before migration 003, whose older replacements were never recorded): the
 *    base tree (and kept snapshots) are walked; their nodes stored in shards about to go are copied into a new
 *    generation of compacted tables.
 * 5. swap: in one transaction, the new generation becomes the place of old rows, and the old generation, the
 *    pruned shards and the shards left empty are dropped.
 * 6. reclaim: the freed pages are returned to the file system (incremental vacuum), so the file really shrinks; an
 *    automatic prune leaves them (up to a bound) for the next commits to reuse.
 *
 * Automatic prunes are asked through shared memory ({@link Pruner.autoTo}), so they progress with commits alone,
 * even in a loop that never yields to the event loop; explicit prunes go through a port and answer through it.
 * @module
 */
import { MessageChannel, type MessagePort, type Worker } from "node:worker_threads";
import { IavlError, type ErrorCode } from "../base/errors.js";
import { FIRST_SLOT, ThreadChannel } from "../base/thread-channel.js";
import type { WriteTurn } from "../base/write-turn.js";

/** Slots of the channel to the prune thread (its STOP stops every prune at its next step boundary): the number of steps holding a connection, … */
export const ACTIVE = FIRST_SLOT;
/** … a count bumped with every new request, which the idle thread waits on, … */
export const WAKE = FIRST_SLOT + 1;
/** … and the newest automatic prune target. */
export const AUTO_TARGET = FIRST_SLOT + 2;
/** Slots the channel needs. */
const SLOTS = FIRST_SLOT + 3;

/** What a prune did. */
export interface PruneResult {
  /** Version rows removed. */
  pruned: number;
  /** The oldest version kept. */
  keptFrom: number;
  /**
   * Bytes the database file shrank by, measured when the prune ended (after its last WAL checkpoint, when the store
   * checkpoints its own). The WAL is not counted: it holds the prune's writes until later commits reuse it, and
   * `close()` removes it.
   */
  reclaimedBytes: number;
  /** Shards dropped whole. */
  droppedShards: number;
}

/** An explicit prune asked of the thread (it returns every free page to the file system). */
export interface PruneRequest {
  id: number;
  upTo: number;
  keepEvery: number | undefined;
}

/** A failure as it crosses back to the owner: errors lose their class and code between threads. */
export interface Failure {
  code: ErrorCode | undefined;
  message: string;
}

/** What the thread tells its owner: progress or the end of an explicit prune (`id`), or a failed automatic one. */
export type PruneReply =
  | { id: number; progress: [done: number, total: number, phase: string] }
  | { id: number; result: PruneResult }
  | { id: number; failed: Failure }
  | { auto: number; failed: Failure };

/** What the thread is started with (beside its channel's slots): where the store is, and how to reach the owner. */
export interface PruneTask {
  file: string;
  busyTimeoutMs: number;
  /** The store's {@link WriteTurn} counter. */
  turn: SharedArrayBuffer;
  /** False when another process (Litestream) checkpoints the WAL: the thread must not, even to bound it. */
  ownWal: boolean;
  /** Automatic prunes: the snapshots they keep and the share of the file they leave free; undefined: none. */
  auto: { keepEvery: number | undefined; keepFree: number } | undefined;
  port: MessagePort;
}

/** Progress: work done of a total in a named phase (totals are estimates for some phases). */
export type PruneProgress = (done: number, total: number, phase: string) => void;

/** What automatic prunes keep, and what they do when one fails. */
export interface AutoPrune {
  keepEvery: number | undefined;
  /** The share of the file left free for the next commits to reuse. */
  keepFree: number;
  onError: (e: IavlError) => void;
}

interface Waiting {
  resolve: (r: PruneResult) => void;
  reject: (e: IavlError) => void;
  onProgress: PruneProgress | undefined;
}

/** Runs the prunes of one store file, one at a time, in one thread. */
export class Pruner {
  /** The channel to the thread, which waits for work on its slots for as long as the store is open. */
  private readonly ch: ThreadChannel & { readonly worker: Worker };
  private readonly port: MessagePort;
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 1;
  private closed = false;

  constructor(
    file: string,
    busyTimeoutMs: number,
    /** The store's turns at the write lock: each prune transaction waits while a commit is waiting or running. */
    turn: WriteTurn,
    /** False when another process (Litestream) checkpoints the store's WAL. */
    ownWal: boolean,
    private readonly auto: AutoPrune | undefined,
  ) {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.port.on("message", (m: PruneReply) => this.reply(m));
    // The port holds the process open only while an explicit prune waits for its answer.
    this.port.unref();
    const task: PruneTask = {
      file,
      busyTimeoutMs,
      turn: turn.buffer,
      ownWal,
      auto: auto === undefined ? undefined : { keepEvery: auto.keepEvery, keepFree: auto.keepFree },
      port: port2,
    };
    // A plain worker rather than a pool's task: a pool holds its thread's port ref'd while a task runs, and this
    // task runs for the life of the store, so that no script that pruned could exit without close(). The thread
    // starts at once, without the owner's event loop, so automatic prunes start even under a writer that never
    // yields; ThreadChannel leaves it unref'd.
    this.ch = ThreadChannel.start(import.meta.url, "prune-thread", SLOTS, task, [port2], (e) => this.failed(e));
    this.ch.worker.on("exit", (code) => this.failed(new Error(`it exited (code ${code})`)));
  }

  /**
   * Removes every version ≤ `upTo` but the latest, and with `keepEvery` but the checkpointed multiples of it; prunes
   * asked while one runs wait their turn. Every free page is returned to the file system.
   */
  prune(upTo: number, keepEvery: number | undefined, onProgress?: PruneProgress): Promise<PruneResult> {
    if (this.closed) return Promise.reject(new IavlError("CLOSED", "the store is closed"));
    if (this.ch.isGone) return Promise.reject(new IavlError("IO_ERROR", "the prune thread is gone"));
    const id = this.nextId++;
    const done = new Promise<PruneResult>((resolve, reject) => this.waiting.set(id, { resolve, reject, onProgress }));
    // Someone awaits the answer: the process must live until it comes.
    this.port.ref();
    this.port.postMessage({ id, upTo, keepEvery } satisfies PruneRequest);
    this.wake();
    return done;
  }

  /** Asks for an automatic prune of every version ≤ `target` (a newer target replaces one not yet reached). */
  autoTo(target: number): void {
    if (this.closed || this.auto === undefined) return;
    if (target <= this.ch.slots.get(AUTO_TARGET)) return;
    this.ch.slots.set(AUTO_TARGET, target);
    this.wake();
  }

  private wake(): void {
    this.ch.slots.add(WAKE);
  }

  private reply(m: PruneReply): void {
    if ("auto" in m) {
      if (!this.closed) this.auto?.onError(new IavlError(m.failed.code ?? "IO_ERROR", `an automatic prune to ${m.auto} failed: ${m.failed.message}`));
      return;
    }
    const w = this.waiting.get(m.id);
    if (w === undefined) return;
    if ("progress" in m) {
      w.onProgress?.(...m.progress);
      return;
    }
    this.settled(m.id);
    if ("result" in m) w.resolve(m.result);
    else w.reject(new IavlError(m.failed.code ?? "CORRUPT", `pruning failed: ${m.failed.message}`));
  }

  private settled(id: number): void {
    this.waiting.delete(id);
    if (this.waiting.size === 0) this.port.unref();
  }

  /** The thread failed or ended while the store is open: every prune waiting fails, never the process. */
  private failed(e: Error): void {
    if (this.closed) return;
    const err = new IavlError("IO_ERROR", `the prune thread failed: ${e.message}`, { cause: e });
    // Automatic prunes stop with the thread: say so once, as for any automatic prune that failed.
    this.auto?.onError(err);
    this.failAll(err);
  }

  private failAll(e: IavlError): void {
    for (const [id, w] of [...this.waiting]) {
      this.settled(id);
      w.reject(e);
    }
  }

  /**
   * Stops pruning: a running prune ends at its next step boundary (running it again later is safe), and prunes still
   * waiting reject with `CLOSED`. Returns once no step holds a connection to the file, so that the store's lock can
   * be released with nothing left writing; each step is short (bounded transactions), so this waits as long as it
   * takes rather than release the lock under a thread that still writes.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.ch.close(WAKE, ACTIVE);
    this.failAll(new IavlError("CLOSED", "the store was closed before the prune ended; it is safe to run it again"));
    this.port.close();
    // The thread holds nothing now and leaves its loop at the stop; its exit need not be waited for.
  }
}
