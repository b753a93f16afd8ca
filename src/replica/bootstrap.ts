/**
 * Starting a replica from the source's snapshot of one version: every store imported (each node checked, the root
 * hash required to be the source's), beside the replica's folder, and moved into place only when whole, so that a
 * replica killed while it starts leaves its folder as it was.
 * @module
 */
import { existsSync, renameSync, rmSync } from "node:fs";
import { equalBytes, toHex } from "../base/bytes.js";
import { IavlError } from "../base/errors.js";
import { decodeItems } from "../sync/wire.js";
import { storeDir } from "../api/multi-folder.js";
import { MultiTree } from "../api/multi-tree.js";
import { Tree } from "../api/tree.js";
import type { ReplicaStoreOptions } from "./local-replica.js";
import type { Source } from "./source.js";

/**
 * Builds the replica of `source` at `version` in `dir` (replacing what it held): a plain store when `stores` is
 * undefined, else a multi-store of those stores, whose app hash must then be the source's.
 */
export async function bootstrap(source: Source, dir: string, version: number, stores: string[] | undefined, options: ReplicaStoreOptions): Promise<void> {
  const next = `${dir}.bootstrap`;
  rmSync(next, { recursive: true, force: true });
  try {
    let appHash: Uint8Array | null = null;
    for (const name of stores ?? [undefined]) {
      const snap = await source.snapshot(name ?? "", version);
      appHash = snap.appHash;
      const tree = await Tree.import(name === undefined ? next : storeDir(next, name), decodeItems(snap.body), { ...options, version, expectedHash: snap.hash });
      tree.close();
    }
    if (stores !== undefined) {
      // The marker is made from the stores, as after a lost one.
      const multi = MultiTree.open(next, { ...options, stores });
      const mine = multi.appHash;
      multi.close();
      if (appHash === null || !equalBytes(mine, appHash)) {
        throw new IavlError("CORRUPT", `the stores imported at version ${version} make app hash ${toHex(mine)}, not the source's ${appHash === null ? "(none)" : toHex(appHash)}`);
      }
    }
    const old = `${dir}.replaced`;
    rmSync(old, { recursive: true, force: true });
    if (existsSync(dir)) renameSync(dir, old);
    renameSync(next, dir);
    rmSync(old, { recursive: true, force: true });
  } finally {
    rmSync(next, { recursive: true, force: true });
  }
}
