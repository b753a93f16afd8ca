/**
 * The backend a {@link Tree} gets from each way of making one: options checked, then a tree in memory, a store opened
 * on disk, or a snapshot imported into a new store; and the rollback of a store no writer holds.
 * @module
 */
import { parseOptions } from "../base/options.js";
import { checkIterable, checkString, checkVersion } from "../base/validate.js";
import type { ExportNode } from "../tree/export-node.js";
import { storeFileIn } from "../sqlite/connection.js";
import { importStore } from "../sync/store-import.js";
import type { Backend } from "./backend.js";
import { DiskBackend } from "./disk-backend.js";
import { MemoryBackend } from "./memory-backend.js";
import { importOptionsSchema, memoryOptionsSchema, openOptionsSchema, type ImportOptions, type MemoryOptions, type OpenOptions } from "./options.js";

/** A backend, and the version its tree's first commit takes when it holds none. */
export interface Opened {
  backend: Backend;
  initialVersion: number;
}

/** A backend holding every version in memory. */
export function memoryBackend(options: MemoryOptions | undefined): Opened {
  const o = parseOptions(memoryOptionsSchema, options);
  return { backend: new MemoryBackend(), initialVersion: o.initialVersion ?? 1 };
}

/** The store in folder `dir`, created when the folder is empty or missing. */
export function diskBackend(dir: string, options: OpenOptions | undefined): Opened {
  checkString(dir, "dir");
  const o = parseOptions(openOptionsSchema, options);
  return { backend: DiskBackend.open(dir, o), initialVersion: o.initialVersion ?? 1 };
}

/** Imports `nodes` into a new store in `dir` (nothing is left there when it fails), then opens it. */
export async function importedBackend(dir: string, nodes: Iterable<ExportNode> | AsyncIterable<ExportNode>, options: ImportOptions): Promise<Opened> {
  checkString(dir, "dir");
  checkIterable(nodes, "the nodes", true);
  const { version, expectedHash, onProgress, ...rest } = parseOptions(importOptionsSchema, options);
  const o = parseOptions(openOptionsSchema, rest);
  await importStore(dir, nodes, { version, expectedHash, onProgress, shardSize: o.shardSize });
  return diskBackend(dir, rest);
}

/** Deletes every version after `version` from the store in `dir`; returns how many were removed. */
export function rollbackBackend(dir: string, version: number): number {
  checkString(dir, "dir");
  checkVersion(version);
  storeFileIn(dir);
  return DiskBackend.rollback(dir, version);
}
