/**
 * The import's side of its writer thread (import-thread.ts): posts row batches, counts those not yet acknowledged,
 * and turns the thread's failure or unexpected exit into an error for the import.
 * @module
 */
import type { Worker } from "node:worker_threads";
import { IavlError } from "../base/errors.js";
import { FIRST_SLOT, ThreadChannel } from "../base/thread-channel.js";

/** Posts batches to the writer thread and counts what it has not acknowledged yet. */
export class BatchWriter {
  /** Messages posted and not acknowledged yet. */
  inFlight = 0;
  private readonly ch: ThreadChannel & { readonly worker: Worker };
  private failure: Error | undefined;
  private waiters: Array<() => void> = [];
  private closing = false;

  /** Starts the writer thread on the store file `file`. */
  constructor(file: string) {
    // Started from this folder: the thread module import-thread sits beside this one.
    this.ch = ThreadChannel.start(import.meta.url, "import-thread", FIRST_SLOT, { file }, [], (e) => (this.failure ??= e));
    const worker = this.ch.worker;
    worker.on("message", (m: { ok?: true; error?: string; code?: unknown }) => {
      if (m.error !== undefined) this.failure ??= new IavlError(m.code === "DISK_FULL" || m.code === "IO_ERROR" ? m.code : "CORRUPT", `the import writer failed: ${m.error}`);
      this.inFlight--;
      this.wake();
    });
    // A writer that ends without saying so (killed, out of memory) must not leave the import waiting forever.
    worker.on("exit", (code) => {
      if (!this.closing) this.failure ??= new IavlError("CORRUPT", `the import writer exited unexpectedly (exit code ${code})`);
      this.wake();
    });
    // Answers come through the event loop, which the import awaits.
    worker.ref();
  }

  /** Sends `msg` (a batch of rows, or the version row) to the writer; throws the writer's failure if it failed. */
  post(msg: object): void {
    if (this.failure !== undefined) throw this.failure;
    this.inFlight++;
    this.ch.worker.postMessage(msg);
  }

  /** Resolves once fewer than `n` batches are in flight; rejects when the writer failed. */
  async below(n: number): Promise<void> {
    while (this.inFlight >= n) {
      if (this.failure !== undefined) throw this.failure;
      await new Promise<void>((r) => this.waiters.push(r));
    }
    if (this.failure !== undefined) throw this.failure;
  }

  /** Stops the writer once it has written what it was given; returns when its connection is closed. */
  close(): void {
    this.closing = true;
    this.ch.worker.postMessage({ close: true });
    this.ch.close();
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}
