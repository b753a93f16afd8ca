/**
 * Checkpoints: the branch nodes not yet stored are written together every few versions, each under a node key
 * (version, sequence) given here.
 * @module
 */
import { NONE, type NodeTable } from "../tree/node.js";
import type { BranchRow, BranchRows } from "../sqlite/rows.js";
import { branchRow } from "../sqlite/node-rows.js";

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
export function collectDirty(t: NodeTable, root: number): CheckpointBatch {
  const numbered: number[] = [];
  let bytes = 0;
  const next = new Map<number, number>();
  const undo = (): void => {
    for (const n of numbered) t.setSeq(n, 0);
  };
  const dirty = (n: number): boolean => n !== NONE && t.seq(n) === 0;
  if (dirty(root) && t.height(root) > 0) {
    const stack: number[] = [root];
    const childrenDone: boolean[] = [false];
    while (stack.length > 0) {
      const n = stack.pop()!;
      if (!childrenDone.pop()) {
        stack.push(n);
        childrenDone.push(true);
        if (dirty(t.right(n))) stack.push(t.right(n)), childrenDone.push(false);
        if (dirty(t.left(n))) stack.push(t.left(n)), childrenDone.push(false);
        continue;
      }
      const version = t.version(n);
      const seq = (next.get(version) ?? 0) + 1;
      next.set(version, seq);
      t.setSeq(n, seq);
      numbered.push(n);
      bytes += t.key(n).length + 32; // a ByteString has a char per byte; a hash has 32
    }
  }
  const rows: BranchRows = {
    count: numbered.length,
    bytes,
    *[Symbol.iterator](): Generator<BranchRow> {
      for (const n of numbered) yield branchRow(t, n);
    },
  };
  return { rows, undo };
}
