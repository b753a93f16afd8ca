/**
 * In-order iteration over a key range of one root, both directions, without recursion.
 * @module
 */
import { latin1 } from "../base/bytes.js";
import type { Node, NodeSource } from "./node.js";

/** Bounds of an iteration: `start` inclusive, `end` exclusive, in ascending order unless `reverse`. */
export interface IterateOptions {
  start?: Uint8Array | undefined;
  end?: Uint8Array | undefined;
  reverse?: boolean | undefined;
}

/** Yields the leaves under `root` whose keys fall in the range, in key order (or reverse). */
export function* iterateLeaves(root: Node | undefined, opts: IterateOptions, src: NodeSource): Generator<Node> {
  if (root === undefined) return;
  const start = opts.start === undefined ? undefined : latin1(opts.start);
  const end = opts.end === undefined ? undefined : latin1(opts.end);
  const reverse = opts.reverse === true;
  // Stack of subtrees still to visit, the next one on top. Subtrees wholly outside the range are never pushed.
  const stack: Node[] = [root];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.height === 0) {
      if (start !== undefined && n.key < start) continue;
      if (end !== undefined && n.key >= end) continue;
      yield n;
      continue;
    }
    // Every key of the left subtree is < n.key, every key of the right subtree is >= n.key.
    const wantLeft = start === undefined || start < n.key;
    const wantRight = end === undefined || end > n.key;
    if (reverse) {
      if (wantLeft) stack.push(src.left(n));
      if (wantRight) stack.push(src.right(n));
    } else {
      if (wantRight) stack.push(src.right(n));
      if (wantLeft) stack.push(src.left(n));
    }
  }
}
