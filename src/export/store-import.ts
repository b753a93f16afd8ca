/**
 * Import of a snapshot stream into a new store: the tree is rebuilt and checked on the main thread while a worker
 * writes the rows, in a temporary folder that becomes the store only once the import completed and matched.
 * @module
 */
import { existsSync, readdirSync, renameSync, rmSync, rmdirSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import type { Worker } from "node:worker_threads";
import { IavlError } from "../errors.js";
import { openStore } from "../checkpoint/working-set.js";
import { LEAF_BASE, type ImportBatch, type VersionRow } from "../sqlite/store.js";
import { EMPTY_HASH } from "../tree/hash.js";
import type { Node } from "../tree/node.js";
import { startWorker } from "../worker-url.js";
import { Importer } from "./importer.js";
import type { ExportNode } from "./types.js";

/** What {@link importStore} needs besides the stream. */
export interface StoreImportOptions {
  /** The version the snapshot is of. */
  version: number;
  /** When given, the import is refused unless the rebuilt root hash equals it. */
  expectedHash?: Uint8Array | undefined;
  /** Versions per shard of the new store. */
  shardSize: number;
  /** Called now and then with the number of items imported so far. */
  onProgress?: ((items: number) => void) | undefined;
}

/** Batches in flight to the writer before the importer waits: enough to keep both cores busy, bounded in memory. */
const MAX_IN_FLIGHT = 3;

/** Imports `nodes` into the new store `dir` (missing or empty). On any failure nothing is left behind. */
export async function importStore(
  dir: string,
  nodes: Iterable<ExportNode> | AsyncIterable<ExportNode>,
  options: StoreImportOptions,
): Promise<void> {
  if (existsSync(dir) && readdirSync(dir).length > 0) {
    throw new IavlError("INVALID_ARGUMENT", `import needs a missing or empty folder, and ${dir} is not empty`);
  }
  const full = resolve(dir);
  const tmp = join(dirname(full), `.${basename(full)}.import-${process.pid}-${Date.now()}`);
  const { db, lock, file } = openStore(tmp, options.shardSize, "normal");
  db.close();
  let worker: Worker | undefined;
  try {
    worker = startWorker("sqlite", "import-worker", { workerData: { file } });
    const writer = new BatchWriter(worker);
    const leafSeq = new Map<number, number>();
    const branchSeq = new Map<number, number>();
    const next = (m: Map<number, number>, v: number, base: number): number => {
      const s = (m.get(v) ?? base) + 1;
      m.set(v, s);
      return s;
    };
    const toRows = (batch: Node[]): ImportBatch => {
      const rows: ImportBatch = { leaves: [], branches: [] };
      for (const n of batch) {
        if (n.height === 0) {
          n.seq = next(leafSeq, n.version, LEAF_BASE);
          rows.leaves.push({ version: n.version, seq: n.seq, key: n.key, value: n.value!, hash: n.hash! });
        } else {
          n.seq = next(branchSeq, n.version, 0);
          const l = n.left!;
          const r = n.right!;
          rows.branches.push({
            version: n.version,
            seq: n.seq,
            key: n.key,
            height: n.height,
            size: n.size,
            hash: n.hash!,
            leftVersion: l.version,
            leftSeq: l.seq,
            rightVersion: r.version,
            rightSeq: r.seq,
          });
        }
      }
      return rows;
    };
    const imp = new Importer({
      version: options.version,
      expectedHash: options.expectedHash,
      retain: false,
      onNodes: (batch) => writer.post({ batch: toRows(batch) }),
    });
    let items = 0;
    for await (const n of nodes) {
      imp.add(n);
      if (++items % 65536 === 0) options.onProgress?.(items);
      if (writer.inFlight >= MAX_IN_FLIGHT) await writer.below(MAX_IN_FLIGHT);
    }
    const root = imp.finish();
    options.onProgress?.(items);
    const commit: VersionRow = {
      version: options.version,
      hash: root?.hash ?? EMPTY_HASH,
      size: root?.size ?? 0,
      checkpoint: true,
      rootVersion: root?.version ?? null,
      rootSeq: root?.seq ?? null,
      ops: 0,
    };
    writer.post({ commit });
    await writer.below(1);
    await writer.close();
    worker = undefined;
    lock.release();
    if (existsSync(full)) rmdirSync(full);
    renameSync(tmp, full);
  } catch (e) {
    if (worker !== undefined) await worker.terminate();
    lock.release();
    rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
}

/** Posts batches to the writer thread and counts what it has not acknowledged yet. */
class BatchWriter {
  inFlight = 0;
  private failure: Error | undefined;
  private waiters: Array<() => void> = [];

  constructor(private readonly worker: Worker) {
    worker.on("message", (m: { ok?: true; error?: string; closed?: true }) => {
      if (m.error !== undefined) this.failure ??= new IavlError("CORRUPT", `the import writer failed: ${m.error}`);
      if (m.ok || m.error !== undefined) this.inFlight--;
      this.wake();
    });
    worker.on("error", (e) => {
      this.failure ??= e;
      this.wake();
    });
  }

  post(msg: object): void {
    if (this.failure !== undefined) throw this.failure;
    this.inFlight++;
    this.worker.postMessage(msg);
  }

  /** Resolves once fewer than `n` batches are in flight; rejects when the writer failed. */
  async below(n: number): Promise<void> {
    while (this.inFlight >= n) {
      if (this.failure !== undefined) throw this.failure;
      await new Promise<void>((r) => this.waiters.push(r));
    }
    if (this.failure !== undefined) throw this.failure;
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((r) => this.worker.once("exit", () => r()));
    this.worker.postMessage({ close: true });
    await closed;
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}
