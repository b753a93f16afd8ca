/**
 * Where a path runs in the tree, read from the padding of its steps: in a tree whose inner preimage is
 * `fixed prefix ‖ children in childOrder`, a child at position i has i siblings in the prefix and the rest in the
 * suffix, so the lengths alone say which child each step came from (ICS23's `getPadding` / `orderFromPadding`).
 * @module
 */
import { equalBytes } from "./bytes.js";
import type { InnerOp } from "./proof-types.js";
import type { InnerSpec } from "./specs.js";

interface Padding {
  minPrefix: number;
  maxPrefix: number;
  suffix: number;
}

/** The prefix and suffix lengths of a step from the child of `branch`, or undefined for no such branch. */
function padding(spec: InnerSpec, branch: number): Padding | undefined {
  const idx = spec.childOrder.indexOf(branch);
  if (idx < 0) return undefined;
  const before = idx * spec.childSize;
  return {
    minPrefix: before + spec.minPrefixLength,
    maxPrefix: before + spec.maxPrefixLength,
    suffix: (spec.childOrder.length - 1 - idx) * spec.childSize,
  };
}

function hasPadding(op: InnerOp, p: Padding | undefined): boolean {
  if (p === undefined) return false;
  return op.prefix.length >= p.minPrefix && op.prefix.length <= p.maxPrefix && op.suffix.length === p.suffix;
}

/** The branch a step came from, or undefined when its lengths fit none. */
function branchOf(spec: InnerSpec, op: InnerOp): number | undefined {
  for (let b = 0; b < spec.childOrder.length; b++) if (hasPadding(op, padding(spec, b))) return b;
  return undefined;
}

function sameStep(a: InnerOp, b: InnerOp): boolean {
  return equalBytes(a.prefix, b.prefix) && equalBytes(a.suffix, b.suffix);
}

/** True when every step of `path` came from the first child: the path of the smallest key. */
export function isLeftMost(spec: InnerSpec, path: readonly InnerOp[]): boolean {
  const p = padding(spec, 0);
  return path.every((op) => hasPadding(op, p));
}

/** True when every step of `path` came from the last child: the path of the largest key. */
export function isRightMost(spec: InnerSpec, path: readonly InnerOp[]): boolean {
  const p = padding(spec, spec.childOrder.length - 1);
  return path.every((op) => hasPadding(op, p));
}

/**
 * True when the leaf of `right` comes right after the leaf of `left`: past the steps they share (the same prefix and
 * suffix, counted from the root), the first steps that differ come from adjacent children, and below them the left
 * path keeps to the right and the right path to the left. Paths that run out before they differ are refused.
 */
export function isLeftNeighbour(spec: InnerSpec, left: readonly InnerOp[], right: readonly InnerOp[]): boolean {
  let l = left.length - 1;
  let r = right.length - 1;
  while (l >= 0 && r >= 0 && sameStep(left[l]!, right[r]!)) {
    l--;
    r--;
  }
  if (l < 0 || r < 0) return false;
  const lb = branchOf(spec, left[l]!);
  const rb = branchOf(spec, right[r]!);
  if (lb === undefined || rb !== lb + 1) return false;
  return isRightMost(spec, left.slice(0, l)) && isLeftMost(spec, right.slice(0, r));
}
