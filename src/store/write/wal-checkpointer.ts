/**
 * The owner's side of the WAL checkpointer thread (wal-thread.ts): it wakes the thread after each commit, and stops
 * it on close, waiting until its connection is closed.
 * @module
 */
import type { Worker } from "node:worker_threads";
import { startWorker } from "../../base/threads.js";

/** Slots of the state shared with the thread (Int32): commits so far, … */
export const COMMITS = 0;
/** … 1 to stop, … */
export const STOP = 1;
/** … 1 once the thread closed its connection, … */
export const CLOSED = 2;
/** … and the frames the last checkpoint left in the WAL. */
export const WAL_FRAMES = 3;

/** What the owner passes to the thread. */
export interface WalThreadData {
  file: string;
  busyTimeoutMs: number;
  /** Four Int32 slots: {@link COMMITS}, {@link STOP}, {@link CLOSED}, {@link WAL_FRAMES}. */
  state: SharedArrayBuffer;
}

/** The longest {@link WalCheckpointer.close} waits for the thread (it only has to finish one checkpoint). */
const CLOSE_WAIT_MS = 60_000;

/** Keeps one store's WAL checkpointed from a thread of its own. */
export class WalCheckpointer {
  /** The state shared with the thread, which a writer thread may also bump (see {@link committed}). */
  readonly shared = new SharedArrayBuffer(16);
  private readonly state = new Int32Array(this.shared);
  private readonly worker: Worker;
  private exited = false;

  constructor(file: string, busyTimeoutMs: number) {
    const shared = this.shared;
    const data: WalThreadData = { file, busyTimeoutMs, state: shared };
    this.worker = startWorker(import.meta.url, "wal-thread", { workerData: data });
    this.worker.on("exit", () => (this.exited = true));
    // A failed checkpoint thread costs only WAL size, which the bound below still caps.
    this.worker.on("error", () => (this.exited = true));
    this.worker.unref();
  }

  /** After a commit: wakes the thread. */
  committed(): void {
    wakeCheckpointer(this.state);
  }

  /** Stops the thread; returns once its connection is closed. */
  close(): void {
    Atomics.store(this.state, STOP, 1);
    Atomics.add(this.state, COMMITS, 1);
    Atomics.notify(this.state, COMMITS);
    const deadline = Date.now() + CLOSE_WAIT_MS;
    while (Atomics.load(this.state, CLOSED) === 0 && !this.exited && Date.now() < deadline) Atomics.wait(this.state, CLOSED, 0, 100);
  }
}

/** Wakes the checkpointer thread whose shared state is `state` (from any thread). */
export function wakeCheckpointer(state: Int32Array): void {
  Atomics.add(state, COMMITS, 1);
  Atomics.notify(state, COMMITS);
}
