/**
 * Import of a snapshot stream into a new store: the tree is rebuilt and checked on the main thread while a worker
 * writes the rows, in a hidden sibling folder that becomes the store only once the import completed and matched.
 * @module
 */
import { existsSync, readdirSync, renameSync, rmSync, rmdirSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import type { Worker } from "node:worker_threads";
import { IavlError } from "../base/errors.js";
import { latin1Bytes } from "../base/bytes.js";
import { digestBytes, EMPTY_DIGEST } from "../base/hash.js";
import { FIRST_SLOT, ThreadChannel } from "../base/thread-channel.js";
import type { ExportNode } from "../tree/export-node.js";
import { Importer, type ImportedNode } from "../tree/importer.js";
import { DEFAULT_BUSY_TIMEOUT_MS } from "../sqlite/connection.js";
import { lockHeld } from "../sqlite/lock.js";
import type { ImportBatch, VersionRow } from "../sqlite/rows.js";
import { leafKeySeq, leafRowId, storedSeq } from "../sqlite/node-rows.js";
import { openStoreFolder } from "../store/folder.js";

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

/** The prefix of the hidden folders imports into `full` build in. */
function tempPrefix(full: string): string {
  return `.${basename(full)}.import-`;
}

/**
 * Removes what earlier imports into `full` left behind (a process killed mid-import leaves its hidden folder): every
 * such folder whose writer lock no live import holds.
 */
function removeLeftovers(full: string): void {
  const parent = dirname(full);
  if (!existsSync(parent)) return;
  const prefix = tempPrefix(full);
  for (const name of readdirSync(parent)) {
    const path = join(parent, name);
    if (name.startsWith(prefix) && !lockHeld(path)) rmSync(path, { recursive: true, force: true });
  }
}

/** Imports `nodes` into the new store `dir` (missing or empty). On any failure nothing is left behind. */
export async function importStore(dir: string, nodes: Iterable<ExportNode> | AsyncIterable<ExportNode>, options: StoreImportOptions): Promise<void> {
  if (existsSync(dir) && readdirSync(dir).length > 0) {
    throw new IavlError("INVALID_ARGUMENT", `import needs a missing or empty folder, and ${dir} is not empty`);
  }
  const full = resolve(dir);
  removeLeftovers(full);
  const tmp = join(dirname(full), `${tempPrefix(full)}${process.pid}-${Date.now()}`);
  const { db, lock, file } = openStoreFolder(tmp, { shardSize: options.shardSize, sync: "off", busyTimeoutMs: DEFAULT_BUSY_TIMEOUT_MS });
  db.close();
  let open: BatchWriter | undefined;
  try {
    const writer = (open = new BatchWriter(file));
    const numbering = new Numbering();
    const imp = new Importer({
      version: options.version,
      expectedHash: options.expectedHash,
      retain: false,
      onNodes: (batch) => writer.post({ batch: toRows(batch, numbering) }),
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
      hash: digestBytes(root?.hash ?? EMPTY_DIGEST),
      size: root?.size ?? 0,
      checkpoint: true,
      rootVersion: root?.version ?? null,
      rootSeq: root === undefined ? null : storedSeq(root.seq),
      ops: 0,
      firstLeaf: null,
      leafRows: null,
    };
    writer.post({ commit });
    await writer.below(1);
    open = undefined;
    writer.close();
    lock.release();
    if (existsSync(full)) rmdirSync(full);
    renameSync(tmp, full);
  } catch (e) {
    open?.close();
    lock.release();
    rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
}

/** Node keys for imported nodes, in stream order: leaves rows 1, 2, …; branches numbered from 1 per version. */
class Numbering {
  private leaves = 0;
  private readonly branches = new Map<number, number>();

  next(n: ImportedNode): number {
    if (n.height === 0) return leafKeySeq(++this.leaves);
    const seq = (this.branches.get(n.version) ?? 0) + 1;
    this.branches.set(n.version, seq);
    return seq;
  }
}

/** Numbers a batch of completed nodes (children come before parents) and turns it into rows. */
function toRows(batch: ImportedNode[], numbering: Numbering): ImportBatch {
  const rows: ImportBatch = { leaves: [], branches: [] };
  for (const n of batch) {
    n.seq = numbering.next(n);
    const key = latin1Bytes(n.key);
    const hash = digestBytes(n.hash);
    if (n.height === 0) {
      rows.leaves.push({ version: n.version, id: leafRowId(n.seq), key, hash, value: n.value ?? null });
      continue;
    }
    const l = n.left!;
    const r = n.right!;
    rows.branches.push({
      version: n.version,
      seq: n.seq,
      key,
      height: n.height,
      size: n.size,
      hash,
      leftVersion: l.version,
      leftSeq: storedSeq(l.seq),
      rightVersion: r.version,
      rightSeq: storedSeq(r.seq),
    });
  }
  return rows;
}

/** Posts batches to the writer thread and counts what it has not acknowledged yet. */
class BatchWriter {
  inFlight = 0;
  private readonly ch: ThreadChannel & { readonly worker: Worker };
  private failure: Error | undefined;
  private waiters: Array<() => void> = [];
  private closing = false;

  constructor(file: string) {
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
