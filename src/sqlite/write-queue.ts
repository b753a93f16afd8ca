/**
 * The owner's side of durability "async": `commit()` hands each version to the background writer and returns; a
 * bounded queue makes it wait only when the writer falls `capacity` versions behind.
 * @module
 */
import { MessageChannel, receiveMessageOnPort, type Worker } from "node:worker_threads";
import { IavlError } from "../errors.js";
import type { Change } from "../tree/backend.js";
import type { VersionWrite } from "./store.js";
import type { WriterWorkerData } from "./writer-worker.js";
import { startWorker } from "../worker-url.js";

/** A version handed to the writer but perhaps not yet on disk, with what reads need meanwhile. */
interface Queued {
  version: number;
  changes: Map<string, Change>;
  /** Runs once the version is on disk. */
  landed: () => void;
}

/** Queue of versions in flight to the writer thread. */
export class WriteQueue {
  private readonly worker: Worker;
  private readonly state: BigInt64Array;
  private readonly errors: MessageChannel;
  private readonly queued: Queued[] = [];
  private failure: IavlError | undefined;

  constructor(
    file: string,
    durable: number,
    private readonly capacity: number,
  ) {
    const shared = new SharedArrayBuffer(16);
    this.state = new BigInt64Array(shared);
    this.state[0] = BigInt(durable);
    this.errors = new MessageChannel();
    const data: WriterWorkerData = { file, state: shared, errors: this.errors.port2 };
    this.worker = startWorker("sqlite", "writer-worker", { workerData: data, transferList: [this.errors.port2] });
    this.worker.on("error", (e) => {
      this.failure ??= new IavlError("CORRUPT", `the background writer stopped: ${e.message}; versions after ${this.durable} were not stored`, { cause: e });
      Atomics.store(this.state, 1, 1n);
      Atomics.notify(this.state, 0);
    });
    this.worker.unref();
  }

  /** The newest version on disk. */
  get durable(): number {
    return Number(Atomics.load(this.state, 0));
  }

  /** Hands `w` to the writer, first waiting for room in the queue. */
  push(w: VersionWrite, changes: Map<string, Change>, landed: () => void): void {
    this.check();
    const oldest = this.queued[0];
    if (this.queued.length >= this.capacity && oldest !== undefined) this.waitFor(oldest.version);
    this.worker.postMessage({ write: w });
    this.queued.push({ version: w.version.version, changes, landed });
  }

  /** The newest queued change of `key` not yet durable, if any (`keyId` as the tree tracks it). */
  pending(keyId: string): Change | undefined {
    this.trim();
    for (let i = this.queued.length - 1; i >= 0; i--) {
      const c = this.queued[i]!.changes.get(keyId);
      if (c !== undefined) return c;
    }
    return undefined;
  }

  /** Blocks until `version` is durable; throws the writer's failure if it failed. */
  waitFor(version: number): void {
    for (;;) {
      const d = Atomics.load(this.state, 0);
      if (d >= BigInt(version)) break;
      this.check();
      Atomics.wait(this.state, 0, d, 1000);
    }
    this.trim();
  }

  /** Resolves when everything queued is durable, without blocking the event loop. */
  async flush(): Promise<void> {
    const last = this.queued[this.queued.length - 1];
    if (last === undefined) return this.check();
    // The worker is unref'd so that it never holds a process open by itself; while someone awaits, it must.
    this.worker.ref();
    try {
      await this.drain(last.version);
    } finally {
      this.worker.unref();
    }
  }

  private async drain(version: number): Promise<void> {
    for (;;) {
      const d = Atomics.load(this.state, 0);
      if (d >= BigInt(version)) break;
      this.check();
      const r = Atomics.waitAsync(this.state, 0, d, 1000);
      if (r.async) await r.value;
    }
    this.trim();
  }

  /** Lands everything queued and stops the writer. */
  close(): void {
    try {
      const last = this.queued[this.queued.length - 1];
      if (last !== undefined && this.failure === undefined) this.waitFor(last.version);
    } finally {
      this.worker.postMessage({ close: true });
    }
  }

  private trim(): void {
    const d = this.durable;
    while (this.queued.length > 0 && this.queued[0]!.version <= d) this.queued.shift()!.landed();
  }

  /** Versions handed to the writer and not yet on disk, oldest first. */
  inFlight(): number[] {
    this.trim();
    return this.queued.map((q) => q.version);
  }

  private check(): void {
    if (this.failure === undefined && Atomics.load(this.state, 1) !== 0n) {
      const m = receiveMessageOnPort(this.errors.port1)?.message as { version: number; message: string } | undefined;
      this.failure = new IavlError("CORRUPT", `the background writer failed at version ${m?.version ?? "?"}: ${m?.message ?? "unknown error"}; versions after ${this.durable} were not stored`);
    }
    if (this.failure !== undefined) throw this.failure;
  }
}
