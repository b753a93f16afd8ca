/**
 * In-order iteration over a key range of one root, both directions, without recursion.
 * @module
 */
import { latin1 } from "../base/bytes.js";
import { NONE, type NodeSource } from "./node.js";
import type { IterateOptions } from "./readonly-tree.js";

/**
 * Yields the leaves under `root` whose keys fall in the range, in key order (or reverse). `resume` runs each time
 * the walk is resumed, before it touches a node again: it throws when the tree may have changed meanwhile (nodes
 * are freed explicitly, so a walk must not go on over a tree its owner has moved past).
 */
export function* iterateLeaves(root: number, opts: IterateOptions, src: NodeSource, resume: () => void): Generator<number> {
  if (root === NONE) return;
  const t = src.t;
  const start = opts.start === undefined ? undefined : latin1(opts.start);
  const end = opts.end === undefined ? undefined : latin1(opts.end);
  const reverse = opts.reverse === true;
  // Stack of subtrees still to visit, the next one on top. Subtrees wholly outside the range are never pushed.
  const stack: number[] = [root];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (t.height(n) === 0) {
      if (start !== undefined && t.compareKey(start, n) > 0) continue;
      if (end !== undefined && t.compareKey(end, n) <= 0) continue;
      yield n;
      resume();
      continue;
    }
    // Every key of the left subtree is < the node's key, every key of the right subtree is >= it.
    const wantLeft = start === undefined || t.compareKey(start, n) < 0;
    const wantRight = end === undefined || t.compareKey(end, n) > 0;
    if (reverse) {
      if (wantLeft) stack.push(src.left(n));
      if (wantRight) stack.push(src.right(n));
    } else {
      if (wantRight) stack.push(src.right(n));
      if (wantLeft) stack.push(src.left(n));
    }
  }
}
