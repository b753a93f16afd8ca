/**
 * A multi-store folder whose files were restored one by one (`iavlite restore` from Litestream replicas): each file is
 * at the last state its replica shipped, so the stores and the commit marker may stand at different versions, some
 * store behind the marker, others ahead by more than the one version a crash leaves. Opening would refuse that; this
 * brings the folder to the newest version every store holds and the marker completed (or an older one asked for),
 * through the folder rollback, which checks the stores' app hash against the marker's.
 * @module
 */
import { existsSync } from "node:fs";
import { IavlError } from "../base/errors.js";
import { checkString } from "../base/validate.js";
import { CommitMarker } from "../sqlite/commit-marker.js";
import { folderStores, markerFile, storeDir } from "./multi-folder.js";
import { rollbackFolder, type MultiRollback } from "./multi-rollback.js";
import { storeLatest } from "./multi-versions.js";

/** What {@link settleRestoredFolder} found and did. */
export interface SettledFolder extends MultiRollback {
  /** The latest version of each store as restored, by name (name order). */
  restored: Array<{ name: string; latest: number }>;
  /** The last version the restored marker completed; undefined when it held none (lost, or never replicated). */
  marker: number | undefined;
  /** The newest version every store held and the marker completed (what {@link version} is unless one was asked for). */
  whole: number;
}

/**
 * Brings restored multi-store folder `dir` to the newest version every store holds whole, or to `version` when given
 * (refused unless it is at most that and kept by every store). A marker without any row is rebuilt from the stores,
 * as a lost one is on open. Throws `VERSION_NOT_FOUND` when no version is whole in every store, `CORRUPT` when the
 * stores' hashes disagree with the marker; nothing changes then.
 */
export function settleRestoredFolder(dir: string, version?: number): SettledFolder {
  checkString(dir, "dir");
  const names = folderStores(dir);
  const restored = names.map((name) => ({ name, latest: storeLatest(storeDir(dir, name)) }));
  const file = markerFile(dir);
  let marker: number | undefined;
  if (existsSync(file)) {
    const m = CommitMarker.open(file, "normal", true);
    try {
      const s = m.state();
      // An interrupted folder rollback left its target as the marker's last whole version.
      marker = s.empty ? undefined : s.whole;
    } finally {
      m.close();
    }
  }
  const whole = Math.min(marker ?? Number.MAX_SAFE_INTEGER, ...restored.map((s) => s.latest));
  const each = `${restored.map((s) => `${s.name} at ${s.latest}`).join(", ")}, the commit marker at ${marker ?? "none"}`;
  if (whole < 1) throw new IavlError("VERSION_NOT_FOUND", `${dir} holds no version every store committed: ${each}`);
  if (version !== undefined && version > whole) {
    throw new IavlError("VERSION_NOT_FOUND", `cannot bring ${dir} to version ${version}: the newest version whole in every store is ${whole} (${each})`);
  }
  return { ...rollbackFolder(dir, version ?? whole), restored, marker, whole };
}
