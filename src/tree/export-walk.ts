/**
 * The walk of one tree version in cosmos/iavl `Exporter` order, as nodes and as {@link ExportNode}s.
 * @module
 */
import type { ExportNode } from "./export-node.js";
import { NONE, type NodeSource, type NodeTable } from "./node.js";
import type { ValueOf } from "./store-contract.js";

/** Runs nothing: for walks over a tree that cannot change under them. */
export const STILL = (): void => {};

/**
 * Yields every node under `root` in depth-first post-order (left subtree, right subtree, node), the order of
 * cosmos/iavl `Exporter` and the order {@link Importer} needs to rebuild the same tree. `resume` runs each time the
 * walk is resumed, before it touches a node again, and throws when the tree may have changed (see iterateLeaves).
 *
 * The walk uses an explicit stack, so it neither recurses nor holds more than about two nodes per level: memory is
 * O(height) however large the tree, and children are loaded from `src` only when the walk reaches them.
 */
export function* postOrder(root: number, src: NodeSource, resume: () => void): Generator<number> {
  if (root === NONE) return;
  const t = src.t;
  // Parallel stacks: a node, and whether its children were already pushed (so its turn comes after theirs).
  const nodes: number[] = [root];
  const expanded: boolean[] = [false];
  while (nodes.length > 0) {
    const top = nodes.length - 1;
    const n = nodes[top]!;
    if (t.height(n) === 0 || expanded[top] === true) {
      nodes.pop();
      expanded.pop();
      yield n;
      resume();
    } else {
      expanded[top] = true;
      // Right first, so that the left subtree is on top and comes out first.
      nodes.push(src.right(n), src.left(n));
      expanded.push(false, false);
    }
  }
}

/**
 * The export item of node `n`: leaves carry their value (from `valueOf`), inner nodes none. The value is a copy: the
 * caller owns what it is handed, and writing into it must not change the tree.
 */
export function exportItem(t: NodeTable, n: number, valueOf: ValueOf): ExportNode {
  const key = t.keyBytes(n);
  const version = t.version(n);
  return t.height(n) === 0 ? { key, value: valueOf(t, n).slice(), version, height: 0 } : { key, version, height: t.height(n) };
}

/**
 * Yields the export items of every node under `root`, in {@link postOrder}, each the caller's own.
 *
 * @param root the root of the version to export; {@link NONE} (an empty tree) yields nothing.
 * @param src gives the children of inner nodes (loading them from storage if needed).
 * @param valueOf gives the value of a leaf (which a store may keep apart from the node).
 */
export function* exportNodes(root: number, src: NodeSource, valueOf: ValueOf, resume: () => void = STILL): Generator<ExportNode> {
  for (const n of postOrder(root, src, resume)) yield exportItem(src.t, n, valueOf);
}
