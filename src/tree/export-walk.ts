/**
 * The walk of one tree version in cosmos/iavl `Exporter` order, as nodes and as {@link ExportNode}s.
 * @module
 */
import { latin1Bytes } from "../base/bytes.js";
import type { ExportNode } from "./export-node.js";
import type { Node, NodeSource } from "./node.js";

/**
 * Yields every node under `root` in depth-first post-order (left subtree, right subtree, node), the order of
 * cosmos/iavl `Exporter` and the order {@link Importer} needs to rebuild the same tree.
 *
 * The walk uses an explicit stack, so it neither recurses nor holds more than about two nodes per level: memory is
 * O(height) however large the tree, and children are loaded from `src` only when the walk reaches them.
 */
export function* postOrder(root: Node | undefined, src: NodeSource): Generator<Node> {
  if (root === undefined) return;
  // Parallel stacks: a node, and whether its children were already pushed (so its turn comes after theirs).
  const nodes: Node[] = [root];
  const expanded: boolean[] = [false];
  while (nodes.length > 0) {
    const top = nodes.length - 1;
    const n = nodes[top]!;
    if (n.height === 0 || expanded[top] === true) {
      nodes.pop();
      expanded.pop();
      yield n;
    } else {
      expanded[top] = true;
      // Right first, so that the left subtree is on top and comes out first.
      nodes.push(src.right(n), src.left(n));
      expanded.push(false, false);
    }
  }
}

/** The export item of `n`: leaves carry their value (from `valueOf`), inner nodes none. */
export function exportItem(n: Node, valueOf: (leaf: Node) => Uint8Array): ExportNode {
  const key = latin1Bytes(n.key);
  return n.height === 0 ? { key, value: valueOf(n), version: n.version, height: 0 } : { key, version: n.version, height: n.height };
}

/**
 * Yields the export items of every node under `root`, in {@link postOrder}. The yielded keys and values are the
 * tree's own arrays, not copies.
 *
 * @param root the root of the version to export; undefined (an empty tree) yields nothing.
 * @param src gives the children of inner nodes (loading them from storage if needed).
 * @param valueOf gives the value of a leaf (which a store may keep apart from the node).
 */
export function* exportNodes(root: Node | undefined, src: NodeSource, valueOf: (leaf: Node) => Uint8Array): Generator<ExportNode> {
  for (const n of postOrder(root, src)) yield exportItem(n, valueOf);
}
