/**
 * Set and remove on the working tree, with the exact balancing of cosmos/iavl `mutable_tree.go` (`recursiveSet`,
 * `recursiveRemove`, `balance`, `rotateLeft`, `rotateRight`). Any other valid AVL would give other root hashes.
 * @module
 */
import type { ByteString } from "../base/bytes.js";
import { compareToNode, keyPrefix, NONE, type NodeSource, type NodeTable } from "./node.js";

/**
 * Applies changes for one working version. Nodes the version made and then dropped are freed at once; nodes of
 * committed versions that it replaced are collected as orphans, for the owner to free once no version it keeps
 * holds them.
 */
export class Mutator {
  /** After {@link setLeaf}: the key was there already. */
  updated = false;
  /** After {@link remove}: the key was there. */
  found = false;
  /** The table the tree's nodes live in. */
  readonly table: NodeTable;
  /** Nodes of older versions replaced since the last {@link takeOrphans}. */
  orphans: number[] = [];
  /** Set by removeIn when the leftmost key of the subtree it returns changed: the key its ancestor must adopt. */
  private newKey: ByteString | undefined = undefined;
  /** The leaf a set replaced. */
  private replaced = NONE;
  /** Nodes of this version that left the tree during the current operation: freed once it is done. */
  private readonly dropped: number[] = [];

  /** Nodes of at most this many leaves hold no stubs (see {@link measure}). */
  private readonly pageLeaves: number;

  constructor(
    /** The version being built: every node created or copied takes it. */
    public version: number,
    private readonly src: NodeSource,
  ) {
    this.table = src.t;
    this.pageLeaves = src.pageLeaves ?? 0;
  }

  /** {@link orphans}, handed to the caller; the mutator starts a new list. */
  takeOrphans(): number[] {
    const o = this.orphans;
    this.orphans = [];
    return o;
  }

  /** Puts `leaf` (a new leaf of this version) under `root`, replacing the leaf of the same key if any; the new root. */
  setLeaf(root: number, leaf: number): number {
    this.updated = false;
    if (root === NONE) return leaf;
    const r = this.setIn(root, leaf, this.table.key(leaf), this.table.prefix(leaf));
    if (this.updated) this.drop(this.replaced);
    this.freeDropped();
    return r;
  }

  private setIn(node: number, leaf: number, key: ByteString, kp: number): number {
    const t = this.table;
    if (t.height(node) === 0) {
      const c = compareToNode(t, key, kp, node);
      if (c === 0) {
        this.updated = true;
        this.replaced = node;
        return leaf;
      }
      if (c < 0) {
        const parent = t.branch(node, this.version, 1, 2);
        t.setLeft(parent, leaf);
        t.setRight(parent, node);
        return parent;
      }
      const parent = t.branch(leaf, this.version, 1, 2);
      t.setLeft(parent, node);
      t.setRight(parent, leaf);
      return parent;
    }
    node = this.own(node);
    if (compareToNode(t, key, kp, node) < 0) t.setLeft(node, this.setIn(this.left(node), leaf, key, kp));
    else t.setRight(node, this.setIn(this.right(node), leaf, key, kp));
    if (this.updated) {
      // The branch that carried the replaced leaf's key takes it from the new leaf (it is on this path).
      t.moveKey(node, this.replaced, leaf);
      return node;
    }
    this.measure(node);
    return this.balance(node);
  }

  /** Removes `key` under `root`; the new root ({@link found} says whether the key was there: if not, nothing changed). */
  remove(root: number, key: ByteString): number {
    this.found = false;
    if (root === NONE) return NONE;
    const r = this.removeIn(root, key, keyPrefix(key));
    this.freeDropped();
    return this.found ? r : root;
  }

  /** Go's `recursiveRemove`: the replacement of `node` ({@link NONE} when it was the removed leaf). */
  private removeIn(node: number, key: ByteString, kp: number): number {
    const t = this.table;
    if (t.height(node) === 0) {
      if (compareToNode(t, key, kp, node) !== 0) return node;
      this.found = true;
      this.newKey = undefined;
      this.drop(node);
      return NONE;
    }
    if (compareToNode(t, key, kp, node) < 0) {
      const r = this.removeIn(this.left(node), key, kp);
      if (!this.found) return node;
      if (r === NONE) {
        // The left leaf went: the right subtree takes this node's place, and its leftmost key is this node's.
        const right = this.right(node);
        this.newKey = t.key(node);
        this.drop(node);
        return right;
      }
      node = this.own(node);
      t.setLeft(node, r);
      this.measure(node);
      return this.balance(node);
    }
    const r = this.removeIn(this.right(node), key, kp);
    if (!this.found) return node;
    if (r === NONE) {
      const left = this.left(node);
      this.newKey = undefined;
      this.drop(node);
      return left;
    }
    node = this.own(node);
    t.setRight(node, r);
    if (this.newKey !== undefined) t.setKey(node, this.newKey);
    this.newKey = undefined;
    this.measure(node);
    return this.balance(node);
  }

  /** Go's `clone`: a working copy of an inner node. A node of the working version is already ours to change. */
  private own(n: number): number {
    const t = this.table;
    if (t.version(n) === this.version) {
      t.unhash(n);
      return n;
    }
    this.orphans.push(n);
    // Children evicted from `n` are loaded into `n` itself, not into its copy: the two then share them. Loaded into the
    // copy only, they would be a second set of the same stored nodes, which a checkpoint walking the tree that holds
    // `n` would not renumber when it moves their page, leaving the live tree naming a page that pruning deletes. A
    // child `n` has a stub of stays unloaded, and the copy gets a stub of its own: only a spine row (more than
    // `pageLeaves` leaves) gives stubs, its children are spine rows and page roots, which a checkpoint moves only
    // into the page of a parent that has become small enough to be one, and {@link measure} loads the children of
    // such a parent into it first.
    if (t.height(n) > 0) {
      if (t.left(n) === NONE && t.leftStub(n) === NONE) this.src.left(n);
      if (t.right(n) === NONE && t.rightStub(n) === NONE) this.src.right(n);
    }
    return t.copy(n, this.version);
  }

  /**
   * A node leaves the working tree: freed once the operation is done if the working version made it (until then a
   * branch on the path may still name its key), else an orphan.
   */
  private drop(n: number): void {
    if (this.table.version(n) === this.version) this.dropped.push(n);
    else this.orphans.push(n);
  }

  private freeDropped(): void {
    const d = this.dropped;
    for (let k = 0; k < d.length; k++) this.table.retire(d[k]!);
    d.length = 0;
  }

  /** A child, from the table when it is in memory (a call through the source only to load one). */
  private left(n: number): number {
    const c = this.table.left(n);
    return c !== NONE ? c : this.src.left(n);
  }

  private right(n: number): number {
    const c = this.table.right(n);
    return c !== NONE ? c : this.src.right(n);
  }

  /** A child's record for its height, size and hash ({@link NodeTable.childRecord}), loading the child if it has none. */
  private record(n: number, left: boolean): number {
    const r = this.table.childRecord(n, left);
    if (r !== NONE) return r;
    return left ? this.src.left(n) : this.src.right(n);
  }

  private measure(n: number): void {
    const t = this.table;
    const l = this.record(n, true);
    const r = this.record(n, false);
    const hl = t.height(l);
    const hr = t.height(r);
    const size = t.size(l) + t.size(r);
    t.measure(n, (hl > hr ? hl : hr) + 1, size);
    // Small enough now to go into a page: the checkpoint will move its children there, so they must be the ones in
    // memory below `n`, which every later copy shares, not stubs that each copy would load for itself (a copy made
    // before the walk loaded them went on naming the page they left, which a prune then deleted: the 1M-key churn
    // failed with CORRUPT after 200 versions).
    if (size <= this.pageLeaves && (t.leftStub(n) !== NONE || t.rightStub(n) !== NONE)) {
      this.src.left(n);
      this.src.right(n);
    }
  }

  private balanceOf(n: number): number {
    return this.table.height(this.record(n, true)) - this.table.height(this.record(n, false));
  }

  private balance(n: number): number {
    const b = this.balanceOf(n);
    if (b > 1) {
      if (this.balanceOf(this.left(n)) >= 0) return this.rotateRight(n);
      this.table.setLeft(n, this.rotateLeft(this.left(n)));
      return this.rotateRight(n);
    }
    if (b < -1) {
      if (this.balanceOf(this.right(n)) <= 0) return this.rotateLeft(n);
      this.table.setRight(n, this.rotateRight(this.right(n)));
      return this.rotateLeft(n);
    }
    return n;
  }

  private rotateRight(n: number): number {
    const t = this.table;
    n = this.own(n);
    const pivot = this.own(this.left(n));
    t.setLeft(n, this.right(pivot));
    t.setRight(pivot, n);
    this.measure(n);
    this.measure(pivot);
    return pivot;
  }

  private rotateLeft(n: number): number {
    const t = this.table;
    n = this.own(n);
    const pivot = this.own(this.right(n));
    t.setRight(n, this.left(pivot));
    t.setLeft(pivot, n);
    this.measure(n);
    this.measure(pivot);
    return pivot;
  }
}
