/**
 * Import of a snapshot stream into a new store: the tree is rebuilt and checked on the main thread while a worker
 * writes the rows, in a hidden sibling folder that becomes the store only once the import completed and matched.
 * @module
 */
import { existsSync, readdirSync, renameSync, rmSync, rmdirSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { IavlError } from "../base/errors.js";
import type { ExportNode } from "../tree/export-node.js";
import { Importer } from "../tree/importer.js";
import { DEFAULT_BUSY_TIMEOUT_MS } from "../sqlite/connection.js";
import { lockHeld } from "../sqlite/lock.js";
import { openStoreFolder } from "../store/folder.js";
import { BatchWriter } from "./batch-writer.js";
import { importedVersionRow, Numbering, toRows } from "./import-rows.js";

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
    const commit = importedVersionRow(options.version, root);
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
