/**
 * Several named trees in one folder, committed together at one version: each store is a store folder of its own
 * under `stores/`, and a commit marker says which version is whole. A version is begun in the marker before any
 * store commits it and completed after all have, so that reopening after a crash knows exactly which version was
 * interrupted: stores that reached it are rolled back to the last whole version (or, when every store reached it,
 * the marker is completed). Nothing is ever deleted on a guess: a marker that is missing is rebuilt from the stores
 * when they agree, and stores that contradict the marker make `open` refuse, naming each store and its version.
 * A rollback of the folder ({@link MultiTree.rollback}) lowers the marker first, noting its target, then rolls back
 * the stores: reopening after a crash in between finishes it.
 * @module
 */
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { IavlError, isIavlError } from "../base/errors.js";
import { equalBytes, toHex } from "../base/bytes.js";
import { parseOptions } from "../base/options.js";
import { checkObject, checkString, checkVersion } from "../base/validate.js";
import { DEFAULT_BUSY_TIMEOUT_MS, STORE_FILE } from "../sqlite/connection.js";
import { CommitMarker, MARKER_FILE, type MarkerState } from "../sqlite/commit-marker.js";
import { rollbackStore } from "../sqlite/rollback.js";
import { openStoreFolder, type OpenFolder } from "../store/folder.js";
import type { PruneResult } from "../prune/pruner.js";
import type { PruneOptions } from "./backend.js";
import { commitInfoHash } from "./commit-info.js";
import { MultiReader, multiStoreNames, storeNameSchema, type MultiReadOptions } from "./multi-reader.js";
import { openOptionsSchema } from "./options.js";
import { DiskBackend } from "./disk-backend.js";
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

/** A rollback of a multi-store folder: what {@link MultiTree.rollback} did, or {@link planMultiRollback} would do. */
export interface MultiRollback {
  /** The version every store is (or would be) back at. */
  version: number;
  /** The app hash of {@link version}. */
  appHash: Uint8Array;
  /** Every store of the folder, sorted by name: its root hash at {@link version}, and the versions after it it held. */
  stores: Array<{ name: string; hash: Uint8Array; removed: number[] }>;
  /**
   * False when there was nothing to do: no store held a later version and the commit marker already ended at
   * {@link version}. True also when only the marker needed it (stores already rolled back one by one).
   */
  needed: boolean;
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

/** The latest committed version of a store (0 when it has none, or no store yet). */
function storeLatest(path: string): number {
  if (!existsSync(join(path, STORE_FILE))) return 0;
  const r = Tree.openReadOnly(path);
  try {
    return r.version;
  } finally {
    r.close();
  }
}

/** The stores of multi-store folder `dir`; `NOT_A_STORE` when it is not one. */
function folderStores(dir: string): string[] {
  const names = multiStoreNames(dir);
  if (names === undefined) throw new IavlError("NOT_A_STORE", `${dir} is not a multi-store folder (no store under ${join(dir, "stores")})`);
  return names;
}

/** Several named IAVL trees committed together. */
export class MultiTree {
  private closed = false;
  private failed: unknown;

  private constructor(
    private readonly marker: CommitMarker,
    private readonly trees: Map<string, Tree>,
    private lastVersion: number,
    /** The `keepEvery` the stores were opened with: what {@link prune} keeps by default. */
    private readonly keepEvery: number | undefined,
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
      const { whole, rollbackTo, endsRollback } = recover(marker, names, held, latest);
      const resolved = parseOptions(openOptionsSchema, { ...storeOptions, initialVersion: whole + 1 });
      for (const name of names) {
        const back = latest(name) > whole ? rollbackTo : undefined;
        trees.set(name, new Tree({ backend: DiskBackend.open(storeDir(dir, name), resolved, back), initialVersion: whole + 1 }));
      }
      const pending = marker.state().pending;
      if (pending !== undefined && pending > whole) marker.abandon(pending);
      // An interrupted folder rollback is done once no store of the folder, opened here or not, is still ahead.
      if (endsRollback && (multiStoreNames(dir) ?? []).every((n) => names.includes(n) || storeLatest(storeDir(dir, n)) <= whole)) {
        marker.endRollback();
      }
      return new MultiTree(marker, trees, whole, o.keepEvery);
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

  /**
   * Rolls the multi-store folder `dir` (which no writer may hold) back to `version`: every store and the commit
   * marker together, so that `MultiTree.open` reopens it at `version`. Rolling back one store alone (`Tree.rollback`
   * on a folder under `stores/`) leaves it behind the others and the marker, which `open` refuses; this call also
   * repairs such a folder, rolled back to a version every store still holds.
   *
   * Every store's writer lock is taken first (`LOCKED`, naming the holder, changes nothing). Then the marker forgets
   * the versions after `version` and notes the rollback, each store deletes them, and the note is cleared: a crash
   * part-way leaves a folder that `open` (or this call again) finishes rolling back.
   *
   * Throws `NOT_A_STORE` when `dir` is not a multi-store folder, `VERSION_NOT_FOUND` when `version` is after the
   * marker's last whole version, `VERSION_PRUNED` / `VERSION_NOT_FOUND` naming a store that does not hold `version`,
   * and `CORRUPT` when the stores' root hashes at `version` do not give the app hash the marker recorded for it; in
   * each case nothing is changed.
   */
  static rollback(dir: string, version: number): MultiRollback {
    checkString(dir, "dir");
    checkVersion(version);
    const names = folderStores(dir);
    const folders: OpenFolder[] = [];
    try {
      for (const n of names) {
        folders.push(openStoreFolder(storeDir(dir, n), { shardSize: 1000, sync: "full", busyTimeoutMs: DEFAULT_BUSY_TIMEOUT_MS }));
      }
      const marker = CommitMarker.open(join(dir, MARKER_FILE), "full");
      try {
        const { plan, rows } = planRollback(dir, version, names, marker);
        marker.beginRollback(version, rows);
        for (const f of folders) rollbackStore(f.db, version);
        marker.endRollback();
        return plan;
      } finally {
        marker.close();
      }
    } finally {
      for (const f of folders) {
        f.db.close();
        f.lock.release();
      }
    }
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

  /**
   * Prunes every store up to `version`, as {@link Tree.prune} does, one store after another. `keepEvery` defaults to
   * the `keepEvery` the multi-store was opened with, so that its snapshots stay; `onProgress` gets each store's
   * phases, named `<store>: <phase>`. The marker forgets the app hashes of the versions no store keeps.
   */
  async prune(version: number, options: PruneOptions = {}): Promise<Map<string, PruneResult>> {
    this.open();
    checkVersion(version);
    checkObject(options, "the prune options");
    const { onProgress } = options;
    if (onProgress !== undefined && typeof onProgress !== "function") throw new IavlError("INVALID_ARGUMENT", "onProgress must be a function");
    const keepEvery = options.keepEvery ?? this.keepEvery;
    const out = new Map<string, PruneResult>();
    for (const [name, t] of this.trees) {
      const progress = onProgress === undefined ? undefined : (done: number, total: number, phase: string): void => onProgress(done, total, `${name}: ${phase}`);
      out.set(name, await t.prune(version, { keepEvery, onProgress: progress }));
    }
    // Snapshots kept by keepEvery keep their app hashes.
    const [first, ...rest] = [...this.trees.values()].map((t) => new Set(t.versions()));
    const kept = [...first!].filter((v) => v <= version && rest.every((s) => s.has(v)));
    this.marker.forget(version, this.lastVersion, kept);
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
): { whole: number; rollbackTo: number | undefined; endsRollback?: boolean } {
  const state = marker.state();
  const refuse: (why: string) => never = (why) => {
    const each = names.map((n) => `${n} at ${latest(n)}`).join(", ");
    throw new IavlError("CORRUPT", `${why}: stores ${each}; nothing was changed`);
  };
  // Stores with no version yet are new: they join at the next version.
  const started = names.filter((n) => latest(n) > 0);
  if (state.rollingBackTo !== undefined) {
    // A folder rollback was interrupted: the marker already dropped what follows its target, the stores go after it.
    const to = state.rollingBackTo;
    if (started.some((n) => latest(n) < to)) refuse(`a rollback to version ${to} was interrupted, and stores are behind it`);
    return { whole: to, rollbackTo: to, endsRollback: true };
  }
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

/**
 * What rolling back multi-store folder `dir` to `version` would delete, checked as {@link MultiTree.rollback} checks
 * it (the same errors), without changing anything and without taking any lock.
 */
export function planMultiRollback(dir: string, version: number): MultiRollback {
  checkString(dir, "dir");
  checkVersion(version);
  const names = folderStores(dir);
  const file = join(dir, MARKER_FILE);
  // A lost marker is rebuilt by the rollback: plan it as an empty one.
  const marker = existsSync(file) ? CommitMarker.open(file, "normal", true) : undefined;
  try {
    return planRollback(dir, version, names, marker).plan;
  } finally {
    marker?.close();
  }
}

/**
 * Checks a rollback of the folder to `version` against the marker and the stores, and gives what goes and the marker
 * rows the target needs (all common versions up to it when the marker was lost, else its own row when missing).
 */
function planRollback(
  dir: string,
  version: number,
  names: string[],
  marker: CommitMarker | undefined,
): { plan: MultiRollback; rows: Array<{ version: number; appHash: Uint8Array }> } {
  const state: MarkerState = marker?.state() ?? { whole: 0, pending: undefined, empty: true, rollingBackTo: undefined };
  if (!state.empty && version > state.whole) {
    throw new IavlError("VERSION_NOT_FOUND", `cannot roll back ${dir} to version ${version}: the last version whole in every store is ${state.whole}`);
  }
  const held = new Map(names.map((n) => [n, storeVersions(storeDir(dir, n))]));
  for (const n of names) {
    if (held.get(n)!.has(version)) continue;
    // The store says why (pruned, or never committed).
    let why = `it holds no version ${version}`;
    let pruned = false;
    const r = Tree.openReadOnly(storeDir(dir, n));
    try {
      r.at(version);
    } catch (e) {
      if (!isIavlError(e, "VERSION_PRUNED") && !isIavlError(e, "VERSION_NOT_FOUND")) throw e;
      [pruned, why] = [e.code === "VERSION_PRUNED", e.message];
    } finally {
      r.close();
    }
    throw new IavlError(pruned ? "VERSION_PRUNED" : "VERSION_NOT_FOUND", `cannot roll back ${dir} to version ${version}: store ${n}: ${why}; nothing was changed`);
  }
  const hashes = new Map(names.map((n) => [n, held.get(n)!.get(version)!]));
  const appHash = commitInfoHash(hashes);
  const recorded = marker?.appHashAt(version);
  if (recorded !== undefined && !equalBytes(recorded, appHash)) {
    throw new IavlError(
      "CORRUPT",
      `cannot roll back ${dir} to version ${version}: the stores' root hashes give app hash ${toHex(appHash)}, the commit marker recorded ${toHex(recorded)}; nothing was changed`,
    );
  }
  const rows = state.empty
    ? commonVersions(names, held).filter((r) => r.version <= version)
    : recorded === undefined
      ? [{ version, appHash }]
      : [];
  const stores = names.map((name) => ({
    name,
    hash: hashes.get(name)!,
    removed: [...held.get(name)!.keys()].filter((v) => v > version).sort((a, b) => a - b),
  }));
  const needed = rows.length > 0 || state.whole !== version || state.pending !== undefined || state.rollingBackTo !== undefined || stores.some((s) => s.removed.length > 0);
  return { plan: { version, appHash, stores, needed }, rows };
}
