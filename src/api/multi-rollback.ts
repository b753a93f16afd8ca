/**
 * A rollback of a multi-store folder: every store and the commit marker together, planned and checked before
 * anything changes. The marker is lowered first, noting its target, then the stores: reopening after a crash in
 * between finishes it (multi-recovery.ts).
 * @module
 */
import { existsSync } from "node:fs";
import { IavlError, isIavlError } from "../base/errors.js";
import { equalBytes, toHex } from "../base/bytes.js";
import { checkString, checkVersion } from "../base/validate.js";
import { DEFAULT_BUSY_TIMEOUT_MS } from "../sqlite/connection.js";
import { CommitMarker, type MarkerState } from "../sqlite/commit-marker.js";
import { rollbackStore } from "../sqlite/rollback.js";
import { openStoreFolder, type OpenFolder } from "../store/folder.js";
import { commitInfoHash } from "./commit-info.js";
import { folderStores, markerFile, storeDir } from "./multi-folder.js";
import { commonVersions, storeVersions } from "./multi-versions.js";
import type { MarkerRow } from "../sqlite/commit-marker.js";
import { Tree } from "./tree.js";

/** A rollback of a multi-store folder: what `MultiTree.rollback` did, or {@link planMultiRollback} would do. */
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

/**
 * Rolls multi-store folder `dir` back to `version`, as `MultiTree.rollback` documents: every store's writer lock
 * first, then the marker, then the stores. Nothing changes when a check fails.
 */
export function rollbackFolder(dir: string, version: number): MultiRollback {
  checkString(dir, "dir");
  checkVersion(version);
  const names = folderStores(dir);
  const folders: OpenFolder[] = [];
  try {
    for (const n of names) folders.push(openStoreFolder(storeDir(dir, n), { shardSize: 1000, sync: "full", busyTimeoutMs: DEFAULT_BUSY_TIMEOUT_MS }));
    const marker = CommitMarker.open(markerFile(dir), "full");
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

/**
 * What rolling back multi-store folder `dir` to `version` would delete, checked as {@link rollbackFolder} checks
 * it (the same errors), without changing anything and without taking any lock.
 */
export function planMultiRollback(dir: string, version: number): MultiRollback {
  checkString(dir, "dir");
  checkVersion(version);
  const names = folderStores(dir);
  const file = markerFile(dir);
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
function planRollback(dir: string, version: number, names: string[], marker: CommitMarker | undefined): { plan: MultiRollback; rows: MarkerRow[] } {
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
