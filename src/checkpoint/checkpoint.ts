/**
 * Checkpoints: the branch nodes not yet stored are written together every few versions, each under a node key
 * (version, sequence) given here.
 * @module
 */
import type { Node } from "../tree/node.js";
import type { BranchRow } from "../sqlite/store.js";

/** The branches to write at a checkpoint, and how to undo their numbering if the write fails. */
export interface CheckpointBatch {
  rows: BranchRow[];
  /** Forgets the sequences given, so that a failed write leaves the nodes dirty. */
  undo(): void;
}

/**
 * Numbers every unstored branch under `root` (children before parents, so each row can name its children) and
 * returns their rows. A stored node's subtree is all stored, so the walk never enters one.
 */
export function collectDirty(root: Node | undefined): CheckpointBatch {
  const rows: BranchRow[] = [];
  const numbered: Node[] = [];
  const next = new Map<number, number>();
  if (root !== undefined && root.seq === 0 && root.height > 0) {
    const stack: Array<[Node, boolean]> = [[root, false]];
    while (stack.length > 0) {
      const [n, childrenDone] = stack.pop()!;
      const l = n.left;
      const r = n.right;
      if (n.height === 0) throw new Error("iavlite: checkpoint found a leaf that was never stored");
      if (!childrenDone) {
        stack.push([n, true]);
        if (r !== undefined && r.seq === 0) stack.push([r, false]);
        if (l !== undefined && l.seq === 0) stack.push([l, false]);
        continue;
      }
      const seq = (next.get(n.version) ?? 0) + 1;
      next.set(n.version, seq);
      n.seq = seq;
      numbered.push(n);
      const lk = l ?? n.leftKey;
      const rk = r ?? n.rightKey;
      if (lk === undefined || rk === undefined || n.hash === undefined) throw new Error("iavlite: checkpoint of an unhashed or incomplete node");
      rows.push({
        version: n.version,
        seq,
        key: n.key,
        height: n.height,
        size: n.size,
        hash: n.hash,
        leftVersion: lk.version,
        leftSeq: lk.seq,
        rightVersion: rk.version,
        rightSeq: rk.seq,
      });
    }
  }
  return {
    rows,
    undo: () => {
      for (const n of numbered) n.seq = 0;
    },
  };
}
