/**
 * Checkpoints: the branch nodes not yet stored are written together every few versions, each under a node key
 * (version, sequence) given here.
 * @module
 */
import type { Node } from "../tree/node.js";
import type { BranchRow, BranchRows } from "../sqlite/rows.js";
import { branchRow } from "./node-rows.js";

/** A write without branches. */
export const NO_BRANCHES: BranchRows = { count: 0, bytes: 0, *[Symbol.iterator](): Generator<BranchRow> {} };

/** The branches to write at a checkpoint, and how to undo their numbering if the write fails. */
export interface CheckpointBatch {
  /** Their rows, made as they are read (so only while the nodes' numbering stands). */
  rows: BranchRows;
  /** Forgets the sequences given, so that a failed write leaves the nodes dirty. */
  undo(): void;
}

/**
 * Numbers every unstored branch under `root` (children before parents, so each row can name its children) and
 * returns their rows. A stored node's subtree is all stored, so the walk never enters one.
 */
export function collectDirty(root: Node | undefined): CheckpointBatch {
  const numbered: Node[] = [];
  let bytes = 0;
  const next = new Map<number, number>();
  const undo = (): void => {
    for (const n of numbered) n.seq = 0;
  };
  if (root !== undefined && root.seq === 0 && root.height > 0) {
    const stack: Array<[Node, boolean]> = [[root, false]];
    while (stack.length > 0) {
      const [n, childrenDone] = stack.pop()!;
      if (!childrenDone) {
        stack.push([n, true]);
        if (n.right !== undefined && n.right.seq === 0) stack.push([n.right, false]);
        if (n.left !== undefined && n.left.seq === 0) stack.push([n.left, false]);
        continue;
      }
      const seq = (next.get(n.version) ?? 0) + 1;
      next.set(n.version, seq);
      n.seq = seq;
      numbered.push(n);
      bytes += n.key.length + 32; // a ByteString has a char per byte; a hash has 32
    }
  }
  const rows: BranchRows = {
    count: numbered.length,
    bytes,
    *[Symbol.iterator](): Generator<BranchRow> {
      for (const n of numbered) yield branchRow(n);
    },
  };
  return { rows, undo };
}
