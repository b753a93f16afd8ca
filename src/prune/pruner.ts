/**
 * Pruning in the background: one thread per store (a piscina worker running one long task, prune-thread.ts) runs
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
import { fileURLToPath } from "node:url";
import { MessageChannel } from "node:worker_threads";
import { Piscina } from "piscina";
import { IavlError } from "../base/errors.js";
import { ThreadChannel } from "../base/thread-channel.js";
import type { WriteTurn } from "../base/write-turn.js";
import { ACTIVE, AUTO_TARGET, SLOTS, WAKE, type PruneReply, type PruneRequest, type PruneResult, type PruneTask } from "./prune-thread.js";

export type { PruneResult } from "./prune-thread.js";

/** Progress: work done of a total in a named phase (totals are estimates for some phases). */
export type PruneProgress = (done: number, total: number, phase: string) => void;

const fromSource = import.meta.url.endsWith(".ts");
const workerFile = fileURLToPath(new URL(fromSource ? "./prune-thread-boot.mjs" : "./prune-thread.js", import.meta.url));

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
  /** The channel to the pool's one thread (piscina starts it: the channel only hears of its failures). */
  private readonly ch = new ThreadChannel(SLOTS);
  private readonly port: MessageChannel["port1"];
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
    // One thread from the start: piscina hands a task to a pool's first threads at once, without waiting for the
    // event loop to hear that they are ready, so automatic prunes start even under a writer that never yields.
    this.pool = new Piscina({ filename: workerFile, minThreads: 1, maxThreads: 1, idleTimeout: Number.POSITIVE_INFINITY });
    // A failure of the pool is one of its thread: every prune waiting then fails, never the process.
    this.pool.on("error", (e: unknown) => {
      this.ch.gone();
      this.failAll(new IavlError("IO_ERROR", `the prune thread failed: ${(e as Error).message}`, { cause: e }));
    });
    const ch = new MessageChannel();
    this.port = ch.port1;
    this.port.on("message", (m: PruneReply) => this.reply(m));
    this.port.unref();
    const task: PruneTask = {
      file,
      busyTimeoutMs,
      slots: this.ch.slots.buffer,
      turn: turn.buffer,
      ownWal,
      auto: auto === undefined ? undefined : { keepEvery: auto.keepEvery, keepFree: auto.keepFree },
      port: ch.port2,
    };
    this.pool.run(task, { transferList: [ch.port2] }).catch((e: unknown) => {
      if (!this.closed) this.failAll(new IavlError("IO_ERROR", `the prune thread failed: ${(e as Error).message}`, { cause: e }));
    });
    // The thread waits for work for as long as the store is open; it must not keep a process alive by itself.
    for (const t of this.pool.threads) t.unref();
  }

  /**
   * Removes every version ≤ `upTo` but the latest, and with `keepEvery` but the checkpointed multiples of it; prunes
   * asked while one runs wait their turn. Every free page is returned to the file system.
   */
  prune(upTo: number, keepEvery: number | undefined, onProgress?: PruneProgress): Promise<PruneResult> {
    if (this.closed) return Promise.reject(new IavlError("CLOSED", "the store is closed"));
    const id = this.nextId++;
    const done = new Promise<PruneResult>((resolve, reject) => this.waiting.set(id, { resolve, reject, onProgress }));
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
    // The thread holds nothing now; letting it go may take a moment and need not be waited for.
    void this.pool.destroy().catch(() => undefined);
  }
}
