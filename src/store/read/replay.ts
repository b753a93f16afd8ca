/**
 * Replay of a version's operations: rebuilds the tree of a version from the tree before it and the version's
 * operations in their original order, so that the shape (and so the hash) is exact even when a key was touched
 * twice in one version.
 * @module
 */
import { IavlError } from "../../base/errors.js";
import { latin1 } from "../../base/bytes.js";
import type { Mutator } from "../../tree/mutate.js";
import { leafKeySeq } from "../../sqlite/node-rows.js";
import type { VersionOps } from "../../sqlite/version-reader.js";

const NO_VALUE = new Uint8Array(0);

/** Applies the operations of `version` to `root` and returns the new root; `hashes` are its leaves rows' hashes by id. */
export function replayVersion(mutator: Mutator, root: number, version: number, vo: VersionOps, hashes: Map<number, Uint8Array>): number {
  const t = mutator.table;
  mutator.version = version;
  for (const op of vo.ops) {
    const row = op.row === undefined ? undefined : vo.firstLeaf + op.row;
    const key = latin1(op.key);
    if (!op.set) {
      root = mutator.remove(root, key);
      if (!mutator.found) throw new IavlError("CORRUPT", `the operations of version ${version} remove a key that is absent`);
      continue;
    }
    // A set that is not its key's last is replaced or removed later in the version: its value never reaches a hash.
    let hash: Uint8Array | undefined;
    if (row !== undefined) {
      hash = hashes.get(row);
      if (hash === undefined) throw new IavlError("CORRUPT", `the leaf of version ${version} in leaves row ${row} is missing`);
    }
    const leaf = t.leaf(key, row === undefined ? NO_VALUE : undefined, version);
    if (row !== undefined) {
      t.setHashBytes(leaf, hash!);
      t.setSeq(leaf, leafKeySeq(row));
    }
    root = mutator.setLeaf(root, leaf);
  }
  return root;
}
