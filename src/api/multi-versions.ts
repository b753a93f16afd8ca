/**
 * What the stores of a multi-store folder hold, read from the stores themselves: each one's versions and root hashes,
 * and the commit marker's rows those prove. Recovery on open and a folder rollback both check the marker against it.
 * @module
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { MarkerRow } from "../sqlite/commit-marker.js";
import { STORE_FILE } from "../sqlite/connection.js";
import { commitInfoHash } from "./commit-info.js";
import type { ReadOnlyStore } from "../store/read/read-only-store.js";
import { Tree } from "./tree.js";


/** The committed versions a store holds, with their root hashes (nothing when it has no store yet). */
export function storeVersions(path: string): Map<number, Uint8Array> {
  return readStore(path, new Map(), (r) => new Map(r.versions().map((v) => [v, r.at(v).hash])));
}

/** The latest committed version of a store (0 when it has none, or no store yet). */
export function storeLatest(path: string): number {
  return readStore(path, 0, (r) => r.version);
}

/** `fn` of the store in `path` opened read-only, or `none` when it has no store yet. */
function readStore<T>(path: string, none: T, fn: (r: ReadOnlyStore) => T): T {
  if (!existsSync(join(path, STORE_FILE))) return none;
  const r = Tree.openReadOnly(path);
  try {
    return fn(r);
  } finally {
    r.close();
  }
}

/** Marker rows for the versions every given store holds, app hashes computed from the stores' root hashes. */
export function commonVersions(names: string[], held: Map<string, Map<number, Uint8Array>>): MarkerRow[] {
  if (names.length === 0) return [];
  const first = held.get(names[0]!)!;
  const rows: MarkerRow[] = [];
  for (const v of first.keys()) {
    if (!names.every((n) => held.get(n)!.has(v))) continue;
    rows.push({ version: v, appHash: commitInfoHash(new Map(names.map((n) => [n, held.get(n)!.get(v)!]))) });
  }
  return rows;
}
