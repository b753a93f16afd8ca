/**
 * Pruning in the background: one thread per store (prune-thread.ts) runs each prune whole, step after step, each step
 * on a connection of its own and in short transactions, while the owner goes on committing.
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
 * The thread is the one thread of a piscina pool, and each of its tasks is finite: it runs the prunes pending (the
 * newest automatic target, from shared memory, and the explicit prunes, from a port) and returns when none is left,
 * so that piscina lets go of its idle thread and a script that pruned ends by itself. The owner starts a task when it
 * asks for work and none is running, through a hand-off in shared memory that loses no request:
 *
 * - the owner first posts the work (the target in {@link AUTO_TARGET}, a request on the port), then moves
 *   {@link STATE} from IDLE to RUNNING and starts a task only if that move succeeded;
 * - a task that finds no work sets IDLE, then looks once more: work posted meanwhile is taken by this task if it moves
 *   STATE back to RUNNING, or else by the task its owner started.
 *
 * Nothing of this waits for the owner's event loop: a running task reads each newer target from shared memory, and
 * piscina posts a new task to its thread at once (see the pool's options), so automatic prunes keep up even with a
 * writer that commits in a loop that never yields. Only explicit prunes' answers wait for the owner's event loop.
 * @module
 */
import { MessageChannel, type MessagePort } from "node:worker_threads";
import { Piscina } from "piscina";
import { IavlError, type ErrorCode } from "../base/errors.js";
import { FIRST_SLOT, poolEntry, Slots, STOP } from "../base/thread-channel.js";
import type { WriteTurn } from "../base/write-turn.js";

/** Slots shared with the prune thread (beside STOP, which stops every prune at its next step boundary): 1 while a task runs, … */
export const ACTIVE = FIRST_SLOT;
/** … {@link IDLE} or {@link RUNNING}: whether a task is started or running, the hand-off's one switch, … */
export const STATE = FIRST_SLOT + 1;
/** … the newest automatic prune target, … */
export const AUTO_TARGET = FIRST_SLOT + 2;
/**
 * … and 1 once the thread's module is loaded. A close waits for it, so that no thread is terminated while it loads:
 * Node 20 aborted the whole process when that happened inside require(esm), which the pool's threads now go without
 * (`poolEntry`'s NO_REQUIRE_ESM); whether an import() cut short is safe on every Node 20 was not proven.
 */
export const LOADED = FIRST_SLOT + 3;
/** Slots the channel needs. */
const SLOTS = FIRST_SLOT + 4;

/** {@link STATE}: no task runs, the next request starts one. */
export const IDLE = 0;
/** {@link STATE}: a task is started or running, and takes every request posted before it ends. */
export const RUNNING = 1;

/** What a prune did. */
export interface PruneResult {
  /** Version rows removed. */
  pruned: number;
  /**
   * The oldest version kept past what this prune and earlier ones asked to remove: every version from it on is kept.
   * The snapshots `keepEvery` kept below it are not counted.
   */
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

/** What the thread is started with (its `workerData`): where the store is, and the slots it shares with the owner. */
export interface PruneThreadData {
  file: string;
  busyTimeoutMs: number;
  /** The store's {@link WriteTurn} counter. */
  turn: SharedArrayBuffer;
  /** False when another process (Litestream) checkpoints the WAL: the thread must not, even to bound it. */
  ownWal: boolean;
  /** Automatic prunes: the snapshots they keep and the share of the file they leave free; undefined: none. */
  auto: { keepEvery: number | undefined; keepFree: number } | undefined;
  slots: SharedArrayBuffer;
}

/** One task: the first one brings the port that explicit prunes come through and are answered on. */
export interface DrainTask {
  port: MessagePort | undefined;
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
  private readonly pool: Piscina;
  private readonly slots = Slots.create(SLOTS);
  private readonly port: MessagePort;
  /** The thread's end of the port, until the first task takes it there. */
  private threadPort: MessagePort | undefined;
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 1;
  private closed = false;
  /** The thread failed: nothing more is asked of it. */
  private gone = false;

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
    this.threadPort = port2;
    this.port.on("message", (m: PruneReply) => this.reply(m));
    // The port holds the process open only while an explicit prune waits for its answer.
    this.port.unref();
    const workerData: PruneThreadData = {
      file,
      busyTimeoutMs,
      turn: turn.buffer,
      ownWal,
      auto: auto === undefined ? undefined : { keepEvery: auto.keepEvery, keepFree: auto.keepFree },
      slots: this.slots.buffer,
    };
    this.pool = new Piscina({
      ...poolEntry(import.meta.url, "prune-thread"),
      workerData,
      // One thread, made now: piscina hands tasks to a pool's first threads without waiting to hear that they are
      // ready, and keeps them when idle (unref'd: an idle pool holds no process open).
      minThreads: 1,
      maxThreads: 1,
      // piscina hears that a task ended only when the owner's event loop turns, and holds back a task for a thread
      // already running this many. The hand-off lets one task run at a time; this bound only lets piscina post the
      // next one before it heard of the last one's end, as a writer that never yields needs.
      concurrentTasksPerWorker: Number.MAX_SAFE_INTEGER,
      recordTiming: false,
    });
    // A failure of the thread with no task running: a task's own failures come through its promise.
    this.pool.on("error", (e: Error) => this.failed(e));
  }

  /**
   * Removes every version ≤ `upTo` but the latest, and with `keepEvery` but the checkpointed multiples of it; prunes
   * asked while one runs wait their turn. Every free page is returned to the file system.
   */
  prune(upTo: number, keepEvery: number | undefined, onProgress?: PruneProgress): Promise<PruneResult> {
    if (this.closed) return Promise.reject(new IavlError("CLOSED", "the store is closed"));
    if (this.gone) return Promise.reject(new IavlError("IO_ERROR", "the prune thread is gone"));
    const id = this.nextId++;
    const done = new Promise<PruneResult>((resolve, reject) => this.waiting.set(id, { resolve, reject, onProgress }));
    // Someone awaits the answer: the process must live until it comes.
    this.port.ref();
    this.port.postMessage({ id, upTo, keepEvery } satisfies PruneRequest);
    this.start();
    return done;
  }

  /** Asks for an automatic prune of every version ≤ `target` (a newer target replaces one not yet reached). */
  autoTo(target: number): void {
    if (this.closed || this.gone || this.auto === undefined) return;
    if (target <= this.slots.get(AUTO_TARGET)) return;
    this.slots.set(AUTO_TARGET, target);
    this.start();
  }

  /** True when no prune task is started or running: none deletes anything until the owner asks again. */
  idle(): boolean {
    return this.slots.get(STATE) === IDLE;
  }

  /** Starts a task unless one is started or running, which then takes the work just posted (see the module). */
  private start(): void {
    if (!this.slots.compareExchange(STATE, IDLE, RUNNING)) return;
    const port = this.threadPort;
    this.threadPort = undefined;
    this.pool.run({ port } satisfies DrainTask, { transferList: port === undefined ? [] : [port] }).catch((e: unknown) => this.failed(e as Error));
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
    // The thread's message may name its step "pruning" already.
    else w.reject(new IavlError(m.failed.code ?? "CORRUPT", `pruning failed: ${m.failed.message.replace(/^pruning: /, "")}`));
  }

  private settled(id: number): void {
    this.waiting.delete(id);
    if (this.waiting.size === 0) this.port.unref();
  }

  /**
   * The thread failed, or a task did, while the store is open (after a close, the pool's destroy fails the tasks it
   * had not heard end, with piscina's "Terminating worker thread": no caller sees it). Every prune waiting fails,
   * never the process, and automatic prunes stop: say so once, as for any automatic prune that failed.
   */
  private failed(e: Error): void {
    if (this.closed || this.gone) return;
    this.gone = true;
    const err = new IavlError("IO_ERROR", `the prune thread failed: ${e.message}`, { cause: e });
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
   * waiting reject with `CLOSED`. Returns once the running task ended (a task that starts later sees the stop before
   * it opens anything), so that the store's lock can be released with nothing left writing; each step is short
   * (bounded transactions), so this waits as long as it takes rather than release the lock under a thread that still
   * writes. Then the pool is destroyed.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.slots.set(STOP, 1);
    // A thread that ended (its module failed to load) has threadId -1 at once, before any event says so.
    while (this.slots.get(LOADED) === 0 && !this.gone && this.pool.threads.some((t) => t.threadId !== -1)) this.slots.wait(LOADED, 0, 100);
    for (let n = this.slots.get(ACTIVE); n > 0 && !this.gone; n = this.slots.get(ACTIVE)) this.slots.wait(ACTIVE, n, 100);
    this.failAll(new IavlError("CLOSED", "the store was closed before the prune ended; it is safe to run it again"));
    this.port.close();
    // The thread holds nothing now; its end need not be waited for.
    void this.pool.destroy();
  }
}
