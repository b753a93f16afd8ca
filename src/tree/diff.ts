/**
 * The net changes between two consecutive versions of a tree held in memory, found from the nodes the later version
 * made: every subtree it shares with the earlier one is skipped whole, so the cost follows the changes, not the size.
 * @module
 */
import { compareLatin1 } from "../base/bytes.js";
import { NONE, type NodeSource } from "./node.js";
import type { KeyChange, ValueOf } from "./store-contract.js";

/** The leaves under `root` in key order, stepping over the subtrees `skip` says to (whole, without loading them). */
function leavesOf(root: number, src: NodeSource, skip: (n: number) => boolean): number[] {
  const t = src.t;
  const out: number[] = [];
  const stack: number[] = root === NONE ? [] : [root];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (skip(n)) continue;
    if (t.height(n) === 0) out.push(n);
    else stack.push(src.right(n), src.left(n));
  }
  return out;
}

/**
 * The net changes from `before` (the tree of version `beforeVersion`, {@link NONE} when empty) to `after` (the tree
 * of the next version), in key order. A node of `after` no newer than `beforeVersion` was carried over from `before`
 * untouched, so only the nodes the next version made are walked, and in `before` only what they replaced.
 */
export function diffTrees(before: number, after: number, beforeVersion: number, src: NodeSource, valueOf: ValueOf): KeyChange[] {
  const t = src.t;
  const shared = new Set<number>();
  const added = leavesOf(after, src, (n) => {
    if (t.version(n) > beforeVersion) return false;
    shared.add(n);
    return true;
  });
  const gone = leavesOf(before, src, (n) => shared.has(n));
  const out: KeyChange[] = [];
  let i = 0;
  let j = 0;
  while (i < added.length || j < gone.length) {
    const c = i === added.length ? 1 : j === gone.length ? -1 : compareLatin1(t.key(added[i]!), t.key(gone[j]!));
    if (c <= 0) {
      out.push({ key: t.keyBytes(added[i]!), value: valueOf(t, added[i]!) });
      i++;
      if (c === 0) j++;
    } else out.push({ key: t.keyBytes(gone[j++]!), value: null });
  }
  return out;
}
