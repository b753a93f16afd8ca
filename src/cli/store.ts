/**
 * Opening stores for the CLI: never creating one by accident, reading without taking the writer lock when the
 * library allows it.
 * @module
 */
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { IavlError } from "../errors.js";
import { STORE_FILE } from "../sqlite/connection.js";
import type { ReadonlyTree } from "../tree/snapshot.js";
import { Tree } from "../tree/tree.js";

/** What the read commands need of an open store. */
export interface ReadHandle {
  readonly version: number;
  readonly hash: Uint8Array;
  at(version: number): ReadonlyTree;
  versions(): number[];
  close(): void;
}

/**
 * Throws `NOT_A_STORE` unless `dir` is a folder holding a store file. `Tree.open` creates a store in a missing or
 * empty folder, which a typo in a read command must not do.
 */
export function requireStore(dir: string): void {
  if (!existsSync(dir)) throw new IavlError("NOT_A_STORE", `${dir} does not exist`);
  if (!statSync(dir).isDirectory()) throw new IavlError("NOT_A_STORE", `${dir} is not a folder`);
  if (!existsSync(join(dir, STORE_FILE))) throw new IavlError("NOT_A_STORE", `${dir} holds no iavlite store (no ${STORE_FILE})`);
}

/** Opens `dir` read-only: it works beside a live writer and never writes. */
export function openForRead(dir: string): ReadHandle {
  requireStore(dir);
  return Tree.openReadOnly(dir);
}

/** The version a command reads: the one asked for, or the latest; `VERSION_NOT_FOUND` on a store with none. */
export function pickVersion(h: ReadHandle, asked: number | undefined): number {
  if (asked !== undefined) return asked;
  if (h.version === 0) throw new IavlError("VERSION_NOT_FOUND", "the store has no committed version yet");
  return h.version;
}

/** Runs `fn` with the store opened for reading, closing it after. */
export async function withReader<T>(dir: string, fn: (h: ReadHandle) => T | Promise<T>): Promise<T> {
  const h = openForRead(dir);
  try {
    return await fn(h);
  } finally {
    h.close();
  }
}
