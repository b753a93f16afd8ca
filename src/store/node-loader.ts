/**
 * The working set's link to storage: children that are not in memory are loaded on first touch, and clean
 * subtrees are evicted again to keep memory within budget.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { sha256, type Digest } from "../base/hash.js";
import { NONE, NodeTable, type NodeSource } from "../tree/node.js";
import type { StoreReader } from "../sqlite/store-reader.js";
import type { VersionRow } from "../sqlite/rows.js";
import { branchNode, leafNode, leafRowId, memorySeq } from "../sqlite/node-rows.js";

/** A {@link NodeSource} over a store, with a node table of its own, counting loads so that the owner knows when to evict. */
export class NodeLoader implements NodeSource {
  readonly t = new NodeTable({ stored: true });
  /** Nodes loaded since the counter was last reset. */
  loads = 0;

  constructor(private readonly store: StoreReader) {}

  left(n: number): number {
    const t = this.t;
    let c = t.left(n);
    if (c === NONE) {
      c = this.load(t.leftVersion(n), t.leftSeq(n), n);
      t.setLeft(n, c);
    }
    return c;
  }

  right(n: number): number {
    const t = this.t;
    let c = t.right(n);
    if (c === NONE) {
      c = this.load(t.rightVersion(n), t.rightSeq(n), n);
      t.setRight(n, c);
    }
    return c;
  }

  valueHash(leaf: number): Digest {
    // Only leaves of the working version lack a stored hash, and they still hold their value.
    const v = this.t.value(leaf);
    if (v === undefined) throw new IavlError("CORRUPT", "a leaf has neither a hash nor a value");
    return sha256(v);
  }

  /** The root of a checkpointed version, or {@link NONE} for an empty tree. */
  root(row: Pick<VersionRow, "rootVersion" | "rootSeq">): number {
    if (row.rootVersion === null || row.rootSeq === null) return NONE;
    return this.load(row.rootVersion, memorySeq(row.rootSeq));
  }

  /** Loads one node by its node key, `seq` in its in-memory form (0: the parent names no stored child). */
  private load(version: number, seq: number, parent?: number): number {
    if (seq === 0) {
      const at = parent === undefined ? "a root" : `node ${this.t.version(parent)}/${this.t.seq(parent)}`;
      throw new IavlError("CORRUPT", `${at} has a child neither in memory nor in storage`);
    }
    this.loads++;
    if (seq < 0) {
      const leaf = this.store.leaves.leaf(version, leafRowId(seq));
      if (leaf !== undefined) return leafNode(this.t, leaf);
    } else {
      const branch = this.store.branches.one(version, seq);
      if (branch !== undefined) return branchNode(this.t, branch);
    }
    throw new IavlError("CORRUPT", `node ${version}/${seq} is missing from the store`);
  }
}

/** Resident nodes of a tree by depth: all of them, and the dirty ones (never evicted). */
export interface DepthCounts {
  all: number[];
  dirty: number[];
}

/** Counts the resident nodes of `root`'s tree by depth (children known only by node key are not resident). */
export function residentByDepth(t: NodeTable, root: number): DepthCounts {
  const out: DepthCounts = { all: [], dirty: [] };
  if (root === NONE) return out;
  const stack: number[] = [root];
  const depths: number[] = [0];
  while (stack.length > 0) {
    const n = stack.pop()!;
    const depth = depths.pop()!;
    out.all[depth] = (out.all[depth] ?? 0) + 1;
    if (t.seq(n) === 0) out.dirty[depth] = (out.dirty[depth] ?? 0) + 1;
    if (t.height(n) === 0) continue;
    const l = t.left(n);
    const r = t.right(n);
    if (l !== NONE) stack.push(l), depths.push(depth + 1);
    if (r !== NONE) stack.push(r), depths.push(depth + 1);
  }
  return out;
}

/**
 * The deepest level `d` such that keeping every node at depths 0..d, and the dirty ones below, keeps at most
 * `target` resident (at least 1: the root's children stay).
 */
export function keepDepthFor(counts: DepthCounts, target: number): number {
  const levels = counts.all.length;
  let dirtyBelow = 0;
  for (let d = 0; d < levels; d++) dirtyBelow += counts.dirty[d] ?? 0;
  let kept = 0;
  let best = 1;
  for (let d = 0; d < levels; d++) {
    kept += counts.all[d] ?? 0;
    dirtyBelow -= counts.dirty[d] ?? 0;
    if (kept + dirtyBelow > target) break;
    best = Math.max(1, d);
  }
  return best;
}

/**
 * Unlinks every clean (stored) node deeper than `keepDepth` from its parent, keeping only its node key, and frees
 * it with everything of it in memory, to be loaded again when next needed. Dirty nodes are never evicted (a stored
 * node's subtree is all stored, so nothing dirty goes with it). Returns how many nodes stay resident.
 */
export function evict(t: NodeTable, root: number, keepDepth: number): number {
  if (root === NONE) return 0;
  let resident = 0;
  const stack: number[] = [root];
  const depths: number[] = [0];
  while (stack.length > 0) {
    const n = stack.pop()!;
    const depth = depths.pop()!;
    resident++;
    if (t.height(n) === 0) continue;
    const l = t.left(n);
    const r = t.right(n);
    const cut = depth >= keepDepth;
    t.ownKey(n); // the leaf it names, deep in its right subtree, may be evicted
    if (l !== NONE) {
      if (cut && t.seq(l) !== 0) {
        t.linkLeft(n, t.version(l), t.seq(l));
        t.retireTree(l);
      } else stack.push(l), depths.push(depth + 1);
    }
    if (r !== NONE) {
      if (cut && t.seq(r) !== 0) {
        t.linkRight(n, t.version(r), t.seq(r));
        t.retireTree(r);
      } else stack.push(r), depths.push(depth + 1);
    }
  }
  return resident;
}
