/**
 * Opening a multi-store folder for writing: what a crash or an interrupted folder rollback left is reconciled with
 * the commit marker before any store opens. Stores that reached an interrupted version (the last of a group of
 * versions, which land together) are rolled back to the last whole one (or, when every store reached it, the marker
 * is completed); a lost marker is rebuilt from the stores when they agree; anything else is refused, naming each
 * store and its version, since nothing is deleted on a guess.
 * @module
 */
import { existsSync, mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { IavlError } from "../base/errors.js";
import { CommitMarker } from "../sqlite/commit-marker.js";
import { STORE_FILE } from "../sqlite/connection.js";
import { DiskBackend } from "./disk-backend.js";
import { markerFile, multiStoreNames, storeDir, storesDir } from "./multi-folder.js";
import { storeOpenOptions, type ResolvedMultiOptions } from "./multi-options.js";
import { commonVersions, storeLatest, storeVersions } from "./multi-versions.js";
import { Tree } from "./tree.js";

/** A multi-store folder opened and recovered: its marker, a tree per store, and the last version whole in all. */
export interface OpenedFolder {
  marker: CommitMarker;
  /** The stores, by name, in name order. */
  trees: Map<string, Tree>;
  whole: number;
  /** Opens store `name` again with the options it was opened with, first rolled back to `version` (its writer closed). */
  reopenAt: (name: string, version: number) => Tree;
}

/**
 * Opens (or creates) the stores `o.stores` of multi-store folder `dir` and its commit marker, recovered to the last
 * whole version. `keeps` gives the folder's last whole version once it is open: no store prunes it (a crash brings
 * the stores back to it). Throws `NOT_A_STORE` for a plain store's folder and `STORES_MISMATCH` for a list of stores that is
 * not the folder's, before anything is written; `CORRUPT` when the stores and the marker cannot be reconciled; then
 * nothing stays open.
 */
export function openFolder(dir: string, o: ResolvedMultiOptions, keeps: () => number): OpenedFolder {
  checkFolder(dir, o.stores, o.addStores ?? []);
  mkdirSync(storesDir(dir), { recursive: true });
  const names = [...o.stores].sort();
  const held = new Map(names.map((n) => [n, storeVersions(storeDir(dir, n))]));
  const latest = (n: string): number => Math.max(0, ...held.get(n)!.keys());
  const marker = CommitMarker.open(markerFile(dir), o.durability, false, o.walCheckpoints);
  const trees = new Map<string, Tree>();
  try {
    const { whole, rollbackTo, endsRollback } = recover(marker, names, held, latest);
    const resolved = storeOpenOptions(o, whole + 1);
    for (const name of names) {
      const back = latest(name) > whole ? rollbackTo : undefined;
      trees.set(name, new Tree({ backend: DiskBackend.open(storeDir(dir, name), resolved, { inline: true, rollbackTo: back, keeps }), initialVersion: whole + 1 }));
    }
    const pending = marker.state().pending;
    if (pending !== undefined && pending > whole) marker.abandon(pending);
    // An interrupted folder rollback is done once no store of the folder, opened here or not, is still ahead.
    if (endsRollback && (multiStoreNames(dir) ?? []).every((n) => names.includes(n) || storeLatest(storeDir(dir, n)) <= whole)) marker.endRollback();
    const reopenAt = (name: string, version: number): Tree =>
      new Tree({ backend: DiskBackend.open(storeDir(dir, name), storeOpenOptions(o, version + 1), { inline: true, rollbackTo: version, keeps }), initialVersion: version + 1 });
    return { marker, trees, whole, reopenAt };
  } catch (e) {
    for (const t of trees.values()) t.close();
    marker.close();
    throw e;
  }
}

/**
 * Refuses to open `dir` as a multi-store of `stores`, before anything is written there, when it is a plain store's
 * folder (its data would be hidden under a multi-store made beside it) or when `stores` is not the folder's list:
 * a store of the folder left out (each is a part of the app hash), or a name the folder lacks that `addStores` does
 * not allow (a misspelled one would be created and commit alone). A folder that has not committed a version yet
 * takes the stores it lacks, since its first open may have been cut short between the stores it creates.
 */
function checkFolder(dir: string, stores: string[], addStores: string[]): void {
  if (existsSync(dir) && !statSync(dir).isDirectory()) throw new IavlError("NOT_A_STORE", `${dir} is not a folder`);
  if (existsSync(join(dir, STORE_FILE))) {
    throw new IavlError("NOT_A_STORE", `${dir} holds a plain store, not a multi-store folder: open it with Tree.open; nothing was changed`);
  }
  const held = multiStoreNames(dir) ?? [];
  const left = held.filter((n) => !stores.includes(n));
  const lacking = stores.filter((n) => !held.includes(n) && !addStores.includes(n));
  if (left.length === 0 && (lacking.length === 0 || held.every((n) => storeLatest(storeDir(dir, n)) === 0))) return;
  const why = [
    ...left.map((n) => `its store ${n} is not named (a store is never dropped)`),
    ...lacking.map((n) => `it has no store ${n} (to add one, name it in addStores too)`),
  ];
  throw new IavlError("STORES_MISMATCH", `${dir} holds the stores ${held.join(", ")}: ${why.join("; ")}; nothing was changed`);
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
  // Only the version a crash interrupted may be ahead (the last of a group: MultiTree.group), and a store ahead is at
  // it; anything else contradicts the marker.
  if (pending === undefined || pending <= whole || ahead.some((n) => latest(n) !== pending)) refuse(`the stores are ahead of the last whole version ${whole}`);
  if (ahead.length === names.length) {
    // Every store committed it (and a group's versions before it): only the marker's completion was lost.
    const rows = commonVersions(names, held).filter((r) => r.version > whole && r.version <= pending);
    marker.rebuild(rows);
    return { whole: pending, rollbackTo: undefined };
  }
  return { whole, rollbackTo: whole };
}
