/**
 * Lookups on one root: by key, by index, and the leaf neighbours that non-existence proofs need.
 * @module
 */
import type { ByteString } from "../base/bytes.js";
import { compareToNode, keyPrefix, type Node, type NodeSource } from "./node.js";

/** The leaf holding `key` under `root`, or undefined. */
export function findLeaf(root: Node | undefined, key: ByteString, src: NodeSource): Node | undefined {
  let n = root;
  if (n === undefined) return undefined;
  const kp = keyPrefix(key);
  while (n.height > 0) n = compareToNode(key, kp, n) < 0 ? src.left(n) : src.right(n);
  return compareToNode(key, kp, n) === 0 ? n : undefined;
}

/**
 * The position `key` has or would take among the leaves under `root` (Go's `GetWithIndex`), and its leaf when present.
 */
export function indexOf(root: Node | undefined, key: ByteString, src: NodeSource): { index: number; leaf: Node | undefined } {
  let n = root;
  if (n === undefined) return { index: 0, leaf: undefined };
  let index = 0;
  const kp = keyPrefix(key);
  while (n.height > 0) {
    if (compareToNode(key, kp, n) < 0) {
      n = src.left(n);
    } else {
      index += src.left(n).size;
      n = src.right(n);
    }
  }
  const c = compareToNode(key, kp, n);
  if (c === 0) return { index, leaf: n };
  return { index: c < 0 ? index : index + 1, leaf: undefined };
}

/** The leaf at position `index` (0-based, in key order) under `root`, or undefined when out of range. */
export function leafAt(root: Node | undefined, index: number, src: NodeSource): Node | undefined {
  let n = root;
  if (n === undefined || index < 0 || index >= n.size) return undefined;
  while (n.height > 0) {
    const l = src.left(n);
    if (index < l.size) {
      n = l;
    } else {
      index -= l.size;
      n = src.right(n);
    }
  }
  return n;
}

/** The path of nodes from `root` down to the leaf of `key` (root first), or undefined when `key` is absent. */
export function pathTo(root: Node | undefined, key: ByteString, src: NodeSource): Node[] | undefined {
  const path: Node[] = [];
  let n = root;
  if (n === undefined) return undefined;
  const kp = keyPrefix(key);
  while (n.height > 0) {
    path.push(n);
    n = compareToNode(key, kp, n) < 0 ? src.left(n) : src.right(n);
  }
  if (compareToNode(key, kp, n) !== 0) return undefined;
  path.push(n);
  return path;
}
