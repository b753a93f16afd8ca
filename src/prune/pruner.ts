/**
 * Pruning in the background: the steps run one after another in a piscina worker thread, each on a connection of
 * its own and in short transactions, while the owner goes on committing.
 *
 * 1. mark: version rows below the first kept version are deleted (readers get VERSION_PRUNED from then on) and the
 *    checkpoint that replays of kept versions start from is recorded as the base.
 * 2. leaves: for each version up to the base, the rows its changes superseded are deleted (and, when snapshots were
 *    dropped, a sweep of every key finds the rows they alone read; see plan.ts).
 * 3. copy: the base tree (and kept snapshots) are walked; their nodes stored in shards about to go are copied into a
 *    new generation of compacted tables.
 * 4. swap: in one transaction, the new generation becomes the place of old rows, and the old generation and the
 *    pruned shards are dropped.
 * 5. reclaim: the freed pages are returned to the file system (incremental vacuum), so the file really shrinks; an
 *    automatic prune leaves them (up to a bound) for the next commits to reuse.
 *
 * Every step can be repeated after a crash: nothing a kept version needs is removed before the step that makes it
 * unnecessary has committed.
 * @module
 */
import { statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { MessageChannel } from "node:worker_threads";
import { Piscina } from "piscina";
import { IavlError } from "../base/errors.js";
import type { PrunePlan } from "../sqlite/prune-rows.js";
import { ACTIVE, STOP, type PruneTask, type StepFailure } from "./prune-thread.js";

/** What a prune did. */
export interface PruneResult {
  /** Version rows removed. */
  pruned: number;
  /** The oldest version kept. */
  keptFrom: number;
  /** Bytes the store files shrank by (the database plus its WAL). */
  reclaimedBytes: number;
  /** Shards dropped whole. */
  droppedShards: number;
}

/** Progress: work done of a total in a named phase (totals are estimates for some phases). */
export type PruneProgress = (done: number, total: number, phase: string) => void;

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
type Transferable = MessageChannel["port2"];

const fromSource = import.meta.url.endsWith(".ts");
const workerFile = fileURLToPath(new URL(fromSource ? "./prune-thread-boot.mjs" : "./prune-thread.js", import.meta.url));

/** The longest {@link Pruner.close} waits for a step to reach its next boundary. */
const CLOSE_WAIT_MS = 60_000;

function fileBytes(file: string): number {
  let n = 0;
  for (const f of [file, `${file}-wal`]) {
    try {
      n += statSync(f).size;
    } catch {
      // absent: nothing to count
    }
  }
  return n;
}

/** Runs prunes of one store file, one at a time. */
export class Pruner {
  private readonly pool: Piscina;
  private readonly control = new SharedArrayBuffer(8);
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly file: string,
    private readonly busyTimeoutMs: number,
  ) {
    this.pool = new Piscina({ filename: workerFile, minThreads: 0, maxThreads: 1, idleTimeout: 2000 });
  }

  /**
   * Removes every version ≤ `upTo` but the latest, and with `keepEvery` but the checkpointed multiples of it;
   * prunes asked while one runs wait their turn. Free pages are returned to the file system until at most
   * `keepFree` of the file is free (0: all of them).
   */
  prune(upTo: number, keepEvery: number | undefined, onProgress?: PruneProgress, keepFree = 0): Promise<PruneResult> {
    if (this.closed) return Promise.reject(new IavlError("CLOSED", "the store is closed"));
    const next = this.queue.then(() => this.run(upTo, keepEvery, onProgress, keepFree));
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async task<T>(t: DistributiveOmit<PruneTask, "file" | "busyTimeoutMs" | "control">, transferList?: Transferable[]): Promise<T> {
    const task = { ...t, file: this.file, busyTimeoutMs: this.busyTimeoutMs, control: this.control } as PruneTask;
    const r = (await this.pool.run(task, transferList ? { transferList } : {})) as T | StepFailure;
    if (typeof r === "object" && r !== null && "failed" in r) {
      throw new IavlError(r.failed.code ?? "CORRUPT", `pruning failed at its ${t.step} step: ${r.failed.message}`);
    }
    return r;
  }

  private async run(upTo: number, keepEvery: number | undefined, onProgress: PruneProgress | undefined, keepFree: number): Promise<PruneResult> {
    const before = fileBytes(this.file);
    const plan = await this.task<PrunePlan>({ step: "mark", upTo, keepEvery });
    onProgress?.(1, 5, "versions");
    const through = plan.base?.version;
    if (through !== undefined) {
      // Rows superseded at or before the version replays start from are dead, a version at a time.
      while (!(await this.task<boolean>({ step: "leaves", through, keepFrom: plan.keepFrom, snapshots: plan.snapshots, versions: 16 }))) onProgress?.(2, 5, "values");
      if (plan.droppedSnapshots) {
        let r: { done: boolean; from?: Uint8Array };
        let from: Uint8Array | undefined;
        do {
          r = await this.task<{ done: boolean; from?: Uint8Array }>({ step: "sweep", through, snapshots: plan.snapshots, from, pages: 8 });
          from = r.from;
          onProgress?.(2, 5, "values of dropped snapshots");
        } while (!r.done);
      }
    }
    if (plan.compactThrough >= 0) {
      const ch = new MessageChannel();
      ch.port1.on("message", (n: number) => onProgress?.(3, 5, `survivors (${n} nodes)`));
      ch.port1.unref();
      try {
        await this.task({ step: "copy", plan, progress: ch.port2 }, [ch.port2]);
      } finally {
        ch.port1.close();
      }
    }
    await this.task({ step: "swap", plan });
    onProgress?.(4, 5, "shards");
    while ((await this.task<number>({ step: "reclaim", slices: 16, keepFree })) > 0) onProgress?.(4, 5, "reclaim");
    onProgress?.(5, 5, "done");
    return {
      pruned: plan.removed,
      keptFrom: plan.keepFrom,
      reclaimedBytes: Math.max(0, before - fileBytes(this.file)),
      droppedShards: plan.compactThrough >= 0 ? plan.dropShards.length : 0,
    };
  }

  /**
   * Stops pruning: a running prune ends at its next step boundary (its promise rejects with `CLOSED`; running it
   * again later is safe), and later steps never start. Returns once no step holds a connection to the file, so
   * that the store's lock can be released with nothing left writing.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    const control = new Int32Array(this.control);
    Atomics.store(control, STOP, 1);
    const deadline = Date.now() + CLOSE_WAIT_MS;
    for (let active = Atomics.load(control, ACTIVE); active > 0 && Date.now() < deadline; active = Atomics.load(control, ACTIVE)) {
      Atomics.wait(control, ACTIVE, active, 100);
    }
    // The threads hold nothing now; letting them go may take a moment and need not be waited for.
    void this.pool.destroy().catch(() => undefined);
  }
}
