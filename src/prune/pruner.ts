/**
 * Pruning in the background: the steps of steps.ts run one after another in a piscina worker thread with its own
 * connection, each in short transactions, while the owner goes on committing.
 * @module
 */
import { statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { MessageChannel } from "node:worker_threads";
import { Piscina } from "piscina";
import type { PrunePlan } from "./steps.js";
import type { PruneTask } from "./worker.js";

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
const workerFile = fileURLToPath(new URL(fromSource ? "./worker-boot.mjs" : "./worker.js", import.meta.url));

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
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly file: string) {
    this.pool = new Piscina({ filename: workerFile, minThreads: 0, maxThreads: 1, idleTimeout: 2000 });
  }

  /**
   * Removes every version ≤ `upTo` but the latest, and with `keepEvery` but the checkpointed multiples of it;
   * prunes asked while one runs wait their turn.
   */
  prune(upTo: number, keepEvery: number | undefined, onProgress?: PruneProgress): Promise<PruneResult> {
    const next = this.queue.then(() => this.run(upTo, keepEvery, onProgress));
    this.queue = next.catch(() => undefined);
    return next;
  }

  private task<T>(t: DistributiveOmit<PruneTask, "file">, transferList?: Transferable[]): Promise<T> {
    return this.pool.run({ ...t, file: this.file }, transferList ? { transferList } : {}) as Promise<T>;
  }

  private async run(upTo: number, keepEvery: number | undefined, onProgress?: PruneProgress): Promise<PruneResult> {
    const before = fileBytes(this.file);
    const plan = await this.task<PrunePlan>({ step: "mark", upTo, keepEvery });
    onProgress?.(1, 5, "versions");
    let r: { done: boolean; from?: Uint8Array };
    let from: Uint8Array | undefined;
    let pages = 0;
    do {
      r = await this.task<{ done: boolean; from?: Uint8Array }>({ step: "trim", keepFrom: plan.keepFrom, snapshots: plan.snapshots, from, pages: 8 });
      from = r.from;
      onProgress?.(2, 5, `values (${(pages += 8)} pages)`);
    } while (!r.done);
    if (plan.compactThrough >= 0) {
      const ch = new MessageChannel();
      ch.port1.on("message", (n: number) => onProgress?.(3, 5, `survivors (${n} nodes)`));
      ch.port1.unref();
      await this.task({ step: "copy", plan, progress: ch.port2 }, [ch.port2]);
      ch.port1.close();
    }
    await this.task({ step: "swap", plan });
    onProgress?.(4, 5, "shards");
    while ((await this.task<number>({ step: "reclaim", slices: 16 })) > 0) onProgress?.(4, 5, "reclaim");
    onProgress?.(5, 5, "done");
    return {
      pruned: plan.removed,
      keptFrom: plan.keepFrom,
      reclaimedBytes: Math.max(0, before - fileBytes(this.file)),
      droppedShards: plan.compactThrough >= 0 ? plan.dropShards.length : 0,
    };
  }

  /** Waits for the running prune, then stops the worker. */
  async close(): Promise<void> {
    await this.queue;
    await this.pool.destroy();
  }
}
