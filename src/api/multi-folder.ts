/**
 * The layout of a multi-store folder: a store folder per name under `stores/`, the commit marker beside them; and the
 * name of a plain store folder's one store.
 * @module
 */
import { existsSync, readdirSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { IavlError } from "../base/errors.js";
import { STORE_FILE } from "../sqlite/connection.js";
import { MARKER_FILE } from "../sqlite/commit-marker.js";

/** The folder under multi-store folder `dir` that holds its stores. */
export function storesDir(dir: string): string {
  return join(dir, "stores");
}

/** The folder of store `name` in multi-store folder `dir`. */
export function storeDir(dir: string, name: string): string {
  return join(storesDir(dir), name);
}

/** The commit marker's file in multi-store folder `dir`. */
export function markerFile(dir: string): string {
  return join(dir, MARKER_FILE);
}

/** The name of the one store of plain store folder `dir`: the folder's own name. */
export function plainStoreName(dir: string): string {
  return basename(resolve(dir));
}

/** The names of the stores in multi-store folder `dir` (sorted), or undefined when `dir` is not a multi-store folder. */
export function multiStoreNames(dir: string): string[] | undefined {
  const stores = storesDir(dir);
  if (!existsSync(stores)) return undefined;
  // A folder under stores/ without a store file is not a store (yet): a store is created by its first open.
  const names = readdirSync(stores, { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(stores, e.name, STORE_FILE)))
    .map((e) => e.name)
    .sort();
  return names.length > 0 ? names : undefined;
}

/** The stores of multi-store folder `dir`; `NOT_A_STORE` when it is not one. */
export function folderStores(dir: string): string[] {
  const names = multiStoreNames(dir);
  if (names === undefined) throw new IavlError("NOT_A_STORE", `${dir} is not a multi-store folder (no store under ${storesDir(dir)})`);
  return names;
}
