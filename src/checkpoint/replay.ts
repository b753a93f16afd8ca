/**
 * Replay of the log: rebuilds the tree of a version from the tree before it and the version's operations in their
 * original order, so that the shape (and so the hash) is exact even when a key was touched twice in one version.
 * @module
 */
import { IavlError } from "../base/errors.js";
import type { Mutator } from "../tree/mutate.js";
import { Node } from "../tree/node.js";
import { OpKind, type LogRow } from "../sqlite/rows.js";

const NO_VALUE = new Uint8Array(0);

/** Applies the log of `version` to `root` and returns the new root. */
export function replayVersion(mutator: Mutator, root: Node | undefined, version: number, log: LogRow[]): Node | undefined {
  mutator.version = version;
  for (const op of log) {
    if (op.kind === OpKind.Delete) {
      const r = mutator.remove(root, op.key);
      if (r.value === undefined) throw new IavlError("CORRUPT", `the log of version ${version} removes a key that is absent`);
      root = r.root;
      continue;
    }
    // A transient leaf is replaced or removed later in the same version, so its value never reaches a hash.
    const leaf = new Node(op.key, op.kind === OpKind.Leaf ? undefined : NO_VALUE, version, 0, 1);
    leaf.seq = op.seq;
    if (op.kind === OpKind.Leaf) {
      if (op.hash === null) throw new IavlError("CORRUPT", `the log of version ${version} has a leaf without a hash`);
      leaf.hash = op.hash;
    }
    root = mutator.setLeaf(root, leaf).root;
  }
  return root;
}
