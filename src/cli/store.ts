/**
 * Opening stores and multi-store folders for the CLI: never creating one by accident, reading without taking the
 * writer lock when the library allows it.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { storeFileIn } from "../sqlite/connection.js";
import { Tree } from "../api/tree.js";
import { MultiTree } from "../api/multi-tree.js";
import type { MultiReader } from "../api/multi-reader.js";

/** A store open for the read commands. */
export type ReadHandle = ReturnType<typeof Tree.openReadOnly>;

/** Opens `dir` read-only: it works beside a live writer and never writes. */
export function openForRead(dir: string): ReadHandle {
  // Tree.open would create a store in a missing or empty folder, which a typo in a read command must not do.
  storeFileIn(dir);
  return Tree.openReadOnly(dir);
}

/** The version a command reads: the one asked for, or the latest; `VERSION_NOT_FOUND` on a store with none. */
export function pickVersion(h: ReadHandle, asked: number | undefined): number {
  if (asked !== undefined) return asked;
  if (h.version === 0) throw new IavlError("VERSION_NOT_FOUND", "the store has no committed version yet");
  return h.version;
}

/** Runs `fn` with the store opened for reading, closing it after. */
export function withReader<T>(dir: string, fn: (h: ReadHandle) => T | Promise<T>): Promise<T> {
  return closing(openForRead(dir), fn);
}

/** Runs `fn` with multi-store folder `dir` opened for reading, closing it after. */
export function withFolderReader<T>(dir: string, fn: (r: MultiReader) => T | Promise<T>): Promise<T> {
  return closing(MultiTree.openReadOnly(dir), fn);
}

/** Runs `fn` on `h`, closing `h` after. */
export async function closing<H extends { close(): void }, T>(h: H, fn: (h: H) => T | Promise<T>): Promise<T> {
  try {
    return await fn(h);
  } finally {
    h.close();
  }
}

/** `VERSION_NOT_FOUND` unless every store of `dir` committed `version`. */
export function checkWhole(r: MultiReader, dir: string, version: number): void {
  // Said for a person: the reader's own message speaks of refresh(), which the command line has not.
  if (version > r.latest) throw new IavlError("VERSION_NOT_FOUND", `version ${version} was never committed by every store of ${dir} (the latest is ${r.latest})`);
}
