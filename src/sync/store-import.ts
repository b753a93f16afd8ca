/**
 * Import of a snapshot stream into a new store: the tree is rebuilt and checked on the main thread while a worker
 * writes the rows, in a hidden sibling folder whose store file moves into the target only once the import completed
 * and matched, the target's writer lock held throughout.
 * @module
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmdirSync, rmSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { IavlError } from "../base/errors.js";
import type { ExportNode } from "../tree/export-node.js";
import { Importer } from "../tree/importer.js";
import { DEFAULT_BUSY_TIMEOUT_MS, STORE_FILE } from "../sqlite/connection.js";
import { LOCK_FILES, lockHeld, WriterLock } from "../sqlite/lock.js";
import { openStoreFolder } from "../store/folder.js";
import { BatchWriter } from "./batch-writer.js";
import { importedVersionRow, Numbering } from "./import-rows.js";

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


/** Whether `dir` may receive an import: missing, or holding nothing but a writer lock's files (a killed import's). */
function vacant(dir: string): boolean {
  return !existsSync(dir) || readdirSync(dir).every((f) => (LOCK_FILES as readonly string[]).includes(f));
}

/**
 * Imports `nodes` into the new store `dir` (missing or empty). The target's writer lock is held from start to end,
 * so that a writer opening `dir` meanwhile gets `LOCKED` instead of making a store the import would then collide
 * with; the store is built in a hidden sibling folder and its file moved into `dir` last. On any failure nothing is
 * left behind.
 */
export async function importStore(dir: string, nodes: Iterable<ExportNode> | AsyncIterable<ExportNode>, options: StoreImportOptions): Promise<void> {
  const notEmpty = (): IavlError => new IavlError("INVALID_ARGUMENT", `import needs a missing or empty folder, and ${dir} is not empty`);
  if (!vacant(dir)) throw notEmpty();
  const full = resolve(dir);
  const made = !existsSync(full);
  mkdirSync(full, { recursive: true });
  // LOCKED leaves the folder to its holder, made here or not.
  const target = WriterLock.acquire(full);
  try {
    // A writer may have made a store and left between the look above and the lock.
    if (!vacant(full)) throw notEmpty();
    await buildStore(full, nodes, options);
  } catch (e) {
    // The folder goes back to how it was found. The lock's files go while it is held, so that no writer that takes
    // the folder after it loses a file of its own, and a folder made here goes only while nothing else is in it.
    if (vacant(full)) for (const f of LOCK_FILES) rmSync(join(full, f), { force: true });
    target.release();
    if (made) removeIfEmpty(full);
    throw e;
  }
  target.release();
}

/** Removes folder `dir` when it is empty; leaves it when anything came in. */
function removeIfEmpty(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // Not empty: another writer's now.
  }
}

/** Builds the store of `nodes` in a hidden sibling of `full` and moves its file into `full`; nothing is left on failure. */
async function buildStore(full: string, nodes: Iterable<ExportNode> | AsyncIterable<ExportNode>, options: StoreImportOptions): Promise<void> {
  removeLeftovers(full);
  const tmp = join(dirname(full), `${tempPrefix(full)}${process.pid}-${Date.now()}`);
  const { db, lock, file } = openStoreFolder(tmp, { shardSize: options.shardSize, sync: "off", busyTimeoutMs: DEFAULT_BUSY_TIMEOUT_MS });
  db.close();
  let open: BatchWriter | undefined;
  try {
    const writer = (open = new BatchWriter(file));
    const numbering = new Numbering(options.version);
    const imp = new Importer({
      version: options.version,
      expectedHash: options.expectedHash,
      retain: false,
      onNodes: (batch) => writer.post({ batch: numbering.rows(batch) }),
    });
    let items = 0;
    for await (const n of nodes) {
      imp.add(n);
      if (++items % 65536 === 0) options.onProgress?.(items);
      if (writer.inFlight >= MAX_IN_FLIGHT) await writer.below(MAX_IN_FLIGHT);
    }
    const root = imp.finish();
    const page = numbering.rootPage();
    if (page !== undefined) writer.post({ batch: { leaves: [], branches: [], pages: [page] } });
    options.onProgress?.(items);
    const commit = importedVersionRow(options.version, root);
    writer.post({ commit });
    await writer.below(1);
    open = undefined;
    // Its connection closed, the WAL checkpointed into the file and gone: the one file is the whole store.
    writer.close();
    renameSync(file, join(full, STORE_FILE));
  } finally {
    open?.close();
    lock.release();
    rmSync(tmp, { recursive: true, force: true });
  }
}
