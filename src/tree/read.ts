/**
 * Lookups on one root: by key, by index, and the leaf neighbours that non-existence proofs need.
 * @module
 */
import type { ByteString } from "../base/bytes.js";
import { compareToNode, keyPrefix, NONE, type NodeSource } from "./node.js";

/** The leaf holding `key` under `root`, or {@link NONE}. */
export function findLeaf(root: number, key: ByteString, src: NodeSource): number {
  if (root === NONE) return NONE;
  const t = src.t;
  const kp = keyPrefix(key);
  let n = root;
  while (t.height(n) > 0) n = compareToNode(t, key, kp, n) < 0 ? src.left(n) : src.right(n);
  return compareToNode(t, key, kp, n) === 0 ? n : NONE;
}

/**
 * The position `key` has or would take among the leaves under `root` (Go's `GetWithIndex`), and its leaf when present
 * ({@link NONE} when not).
 */
export function indexOf(root: number, key: ByteString, src: NodeSource): { index: number; leaf: number } {
  if (root === NONE) return { index: 0, leaf: NONE };
  const t = src.t;
  let index = 0;
  const kp = keyPrefix(key);
  let n = root;
  while (t.height(n) > 0) {
    if (compareToNode(t, key, kp, n) < 0) {
      n = src.left(n);
    } else {
      index += t.size(src.left(n));
      n = src.right(n);
    }
  }
  const c = compareToNode(t, key, kp, n);
  if (c === 0) return { index, leaf: n };
  return { index: c < 0 ? index : index + 1, leaf: NONE };
}

/** The leaf at position `index` (0-based, in key order) under `root`, or {@link NONE} when out of range. */
export function leafAt(root: number, index: number, src: NodeSource): number {
  const t = src.t;
  if (root === NONE || index < 0 || index >= t.size(root)) return NONE;
  let n = root;
  while (t.height(n) > 0) {
    const l = src.left(n);
    if (index < t.size(l)) {
      n = l;
    } else {
      index -= t.size(l);
      n = src.right(n);
    }
  }
  return n;
}

/** The path of nodes from `root` down to the leaf of `key` (root first), or undefined when `key` is absent. */
export function pathTo(root: number, key: ByteString, src: NodeSource): number[] | undefined {
  if (root === NONE) return undefined;
  const t = src.t;
  const path: number[] = [];
  const kp = keyPrefix(key);
  let n = root;
  while (t.height(n) > 0) {
    path.push(n);
    n = compareToNode(t, key, kp, n) < 0 ? src.left(n) : src.right(n);
  }
  if (compareToNode(t, key, kp, n) !== 0) return undefined;
  path.push(n);
  return path;
}
