/**
 * Several named trees in one folder, committed together at one version: each store is a store folder of its own
 * under `stores/`, and a commit marker says which version is whole. A version is begun in the marker before any
 * store commits it and completed after all have, so that reopening after a crash knows exactly which version was
 * interrupted: stores that reached it are rolled back to the last whole version (or, when every store reached it,
 * the marker is completed). Nothing is ever deleted on a guess: a marker that is missing is rebuilt from the stores
 * when they agree, and stores that contradict the marker make `open` refuse, naming each store and its version.
 * @module
 */
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { IavlError } from "../base/errors.js";
import { parseOptions } from "../base/options.js";
import { checkString, checkVersion } from "../base/validate.js";
import { STORE_FILE } from "../sqlite/connection.js";
import { CommitMarker, MARKER_FILE } from "../sqlite/commit-marker.js";
import type { PruneResult } from "../prune/pruner.js";
import { commitInfoHash } from "./commit-info.js";
import { MultiReader, storeNameSchema, type MultiReadOptions } from "./multi-reader.js";
import { openOptionsSchema } from "./options.js";
import { StoreBackend } from "./store-backend.js";
import { Tree } from "./tree.js";

/** Options of {@link MultiTree.open}: the store names, and the options every store opens with. */
export const multiOptionsSchema = openOptionsSchema
  .extend({
    /** Names of the stores (letters, digits, `_`, `-`, `.`), at least one, no duplicates. */
    stores: z
      .array(storeNameSchema)
      .min(1)
      .refine((a) => new Set(a).size === a.length, "store names must be distinct"),
    // A version is whole only when the marker is written after every store's commit is on disk.
    durability: z.enum(["normal", "full"]).default("normal"),
  })
  .strict();

/** Options of {@link MultiTree.open}. */
export type MultiTreeOptions = z.input<typeof multiOptionsSchema>;

/** What {@link MultiTree.commit} returns. */
export interface MultiCommitResult {
  version: number;
  /** Root hash of every store. */
  hashes: Map<string, Uint8Array>;
  /** The Cosmos SDK CommitInfo hash over the stores. */
  appHash: Uint8Array;
}

export { multiStoreNames } from "./multi-reader.js";

/** The folder of store `name` in multi-store folder `dir`. */
function storeDir(dir: string, name: string): string {
  return join(dir, "stores", name);
}

/** The committed versions a store holds, with their root hashes (nothing when it has no store yet). */
function storeVersions(path: string): Map<number, Uint8Array> {
  if (!existsSync(join(path, STORE_FILE))) return new Map();
  const r = Tree.openReadOnly(path);
  try {
    return new Map(r.versions().map((v) => [v, r.at(v).hash]));
  } finally {
    r.close();
  }
}

/** Several named IAVL trees committed together. */
export class MultiTree {
  private closed = false;
  private failed: unknown;

  private constructor(
    private readonly marker: CommitMarker,
    private readonly trees: Map<string, Tree>,
    private lastVersion: number,
  ) {}

  /** Opens (or creates) the multi-store in `dir` with the given stores. */
  static open(dir: string, options: MultiTreeOptions): MultiTree {
    checkString(dir, "dir");
    const o = parseOptions(multiOptionsSchema, options);
    const { stores, ...storeOptions } = o;
    mkdirSync(join(dir, "stores"), { recursive: true });
    const names = [...stores].sort();
    const held = new Map(names.map((n) => [n, storeVersions(storeDir(dir, n))]));
    const latest = (n: string): number => Math.max(0, ...held.get(n)!.keys());
    const marker = CommitMarker.open(join(dir, MARKER_FILE), o.durability);
    const trees = new Map<string, Tree>();
    try {
      const { whole, rollbackTo } = recover(marker, names, held, latest);
      const resolved = parseOptions(openOptionsSchema, { ...storeOptions, initialVersion: whole + 1 });
      for (const name of names) {
        const back = latest(name) > whole ? rollbackTo : undefined;
        trees.set(name, new Tree(StoreBackend.open(storeDir(dir, name), resolved, back), whole + 1));
      }
      const pending = marker.state().pending;
      if (pending !== undefined && pending > whole) marker.abandon(pending);
      return new MultiTree(marker, trees, whole);
    } catch (e) {
      for (const t of trees.values()) t.close();
      marker.close();
      throw e;
    }
  }

  /**
   * Opens the multi-store in `dir` read-only, for a query process beside the writer (or a plain store folder, whose
   * one store is named after the folder): see {@link MultiReader}. It never writes nor takes the writer lock.
   */
  static openReadOnly(dir: string, options?: MultiReadOptions): MultiReader {
    return MultiReader.open(dir, options);
  }

  /** The store `name`. */
  tree(name: string): Tree {
    this.open();
    const t = this.trees.get(name);
    if (t === undefined) throw new IavlError("INVALID_ARGUMENT", `no store named ${name} (stores: ${[...this.trees.keys()].join(", ")})`);
    return t;
  }

  /** Names of the stores, sorted. */
  get names(): string[] {
    return [...this.trees.keys()];
  }

  /** The last version committed by every store. */
  get version(): number {
    this.open();
    return this.lastVersion;
  }

  /** The app hash of the last committed version (computed from the stores' hashes). */
  get appHash(): Uint8Array {
    this.open();
    return commitInfoHash(new Map([...this.trees].map(([n, t]) => [n, t.hash])));
  }

  /** Commits every store at the next version; the version is whole once this returns. */
  commit(): MultiCommitResult {
    this.open();
    const version = this.lastVersion + 1;
    const hashes = new Map<string, Uint8Array>();
    try {
      this.marker.begin(version);
      for (const [name, t] of this.trees) {
        const c = t.commit();
        if (c.version !== version) throw new IavlError("CORRUPT", `store ${name} committed version ${c.version}, expected ${version}`);
        hashes.set(name, c.hash);
      }
      const appHash = commitInfoHash(hashes);
      this.marker.complete(version, appHash);
      this.lastVersion = version;
      return { version, hashes, appHash };
    } catch (e) {
      // Some stores may be ahead now: refuse further work; reopening brings them back to the last whole version.
      this.failed = e;
      throw e;
    }
  }

  /** The app hash recorded for committed `version`. */
  appHashAt(version: number): Uint8Array {
    this.open();
    checkVersion(version);
    const h = this.marker.appHashAt(version);
    if (h === undefined) throw new IavlError("VERSION_NOT_FOUND", `version ${version} was never committed by this multi-store`);
    return h;
  }

  /** Prunes every store up to `version`. */
  async prune(version: number): Promise<Map<string, PruneResult>> {
    this.open();
    checkVersion(version);
    const out = new Map<string, PruneResult>();
    for (const [name, t] of this.trees) out.set(name, await t.prune(version));
    this.marker.forget(version, this.lastVersion);
    return out;
  }

  /** Closes every store (each returns once its threads stopped), then the marker. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      for (const t of this.trees.values()) t.close();
    } finally {
      this.marker.close();
    }
  }

  private open(): void {
    if (this.closed) throw new IavlError("CLOSED", "the multi-store is closed");
    if (this.failed !== undefined) {
      throw new IavlError("CORRUPT", `a commit failed part-way (${(this.failed as Error).message}); reopen to continue from the last whole version`);
    }
  }
}

/**
 * Decides, from the marker and the versions each store holds, which version is whole and what a store ahead of it
 * is rolled back to; completes or rebuilds the marker where the stores prove it. Throws `CORRUPT`, naming every
 * store and its version, when they cannot be reconciled without losing a version that was whole.
 */
function recover(
  marker: CommitMarker,
  names: string[],
  held: Map<string, Map<number, Uint8Array>>,
  latest: (name: string) => number,
): { whole: number; rollbackTo: number | undefined } {
  const state = marker.state();
  const refuse: (why: string) => never = (why) => {
    const each = names.map((n) => `${n} at ${latest(n)}`).join(", ");
    throw new IavlError("CORRUPT", `${why}: stores ${each}; nothing was changed`);
  };
  // Stores with no version yet are new: they join at the next version.
  const started = names.filter((n) => latest(n) > 0);
  if (state.empty) {
    // A new multi-store, or one whose marker was lost: the stores must agree, and then they prove the marker.
    const at = new Set(started.map(latest));
    if (at.size > 1) refuse("the commit marker is missing and the stores are at different versions");
    const whole = at.size === 0 ? 0 : [...at][0]!;
    marker.rebuild(commonVersions(started, held));
    return { whole, rollbackTo: undefined };
  }
  const { whole, pending } = state;
  const ahead = started.filter((n) => latest(n) > whole);
  const behind = started.filter((n) => latest(n) < whole);
  if (behind.length > 0) refuse(`the stores must be at the last whole version ${whole}`);
  if (ahead.length === 0) return { whole, rollbackTo: undefined };
  // Only the version a crash interrupted may be ahead: anything else contradicts the marker.
  if (pending !== whole + 1 || ahead.some((n) => latest(n) !== pending)) refuse(`the stores are ahead of the last whole version ${whole}`);
  if (ahead.length === names.length) {
    // Every store committed it: only the marker's completion was lost.
    const rows = commonVersions(names, held).filter((r) => r.version === pending);
    marker.rebuild(rows);
    return { whole: pending, rollbackTo: undefined };
  }
  return { whole, rollbackTo: whole };
}

/** Marker rows for the versions every given store holds, app hashes computed from the stores' root hashes. */
function commonVersions(names: string[], held: Map<string, Map<number, Uint8Array>>): Array<{ version: number; appHash: Uint8Array }> {
  if (names.length === 0) return [];
  const first = held.get(names[0]!)!;
  const rows: Array<{ version: number; appHash: Uint8Array }> = [];
  for (const v of first.keys()) {
    if (!names.every((n) => held.get(n)!.has(v))) continue;
    rows.push({ version: v, appHash: commitInfoHash(new Map(names.map((n) => [n, held.get(n)!.get(v)!]))) });
  }
  return rows;
}
