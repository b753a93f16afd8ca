/**
 * Set and remove on the working tree, with the exact balancing of cosmos/iavl `mutable_tree.go` (`recursiveSet`,
 * `recursiveRemove`, `balance`, `rotateLeft`, `rotateRight`). Any other valid AVL would give other root hashes.
 * @module
 */
import type { ByteString } from "../base/bytes.js";
import { compareToNode, keyPrefix, Node, type NodeSource } from "./node.js";

/** Result of {@link Mutator.remove}. */
export interface Removal {
  /** The new root (undefined when the tree became empty). */
  root: Node | undefined;
  /** The removed value, or undefined when the key was absent (the tree is then untouched). */
  value: Uint8Array | undefined;
}

/** Applies changes for one working version. */
export class Mutator {
  constructor(
    /** The version being built: every node created or copied takes it. */
    public version: number,
    private readonly src: NodeSource,
  ) {}

  /** Sets `key` under `root`; returns the new root and whether an existing key was updated. */
  set(root: Node | undefined, key: ByteString, value: Uint8Array): { root: Node; updated: boolean } {
    return this.setLeaf(root, Node.leaf(key, value, this.version));
  }

  /** Puts `leaf` (a new leaf of this version) under `root`, replacing the leaf of the same key if any. */
  setLeaf(root: Node | undefined, leaf: Node): { root: Node; updated: boolean } {
    if (root === undefined) return { root: leaf, updated: false };
    this.updated = false;
    const newRoot = this.setIn(root, leaf);
    return { root: newRoot, updated: this.updated };
  }

  private updated = false;

  private setIn(node: Node, leaf: Node): Node {
    const key = leaf.key;
    if (node.height === 0) {
      const c = compareToNode(key, leaf.kp, node);
      if (c === 0) {
        this.updated = true;
        return leaf;
      }
      const parent = new Node(c < 0 ? node.key : key, undefined, this.version, 1, 2);
      if (c < 0) this.link(parent, leaf, node);
      else this.link(parent, node, leaf);
      return parent;
    }
    node = this.own(node);
    if (compareToNode(key, leaf.kp, node) < 0) this.setLeft(node, this.setIn(this.src.left(node), leaf));
    else this.setRight(node, this.setIn(this.src.right(node), leaf));
    if (this.updated) return node;
    this.measure(node);
    return this.balance(node);
  }

  /** Removes `key` under `root`. When the key is absent nothing is copied or changed. */
  remove(root: Node | undefined, key: ByteString): Removal {
    if (root === undefined) return { root, value: undefined };
    this.removed = undefined;
    const r = this.removeIn(root, key, keyPrefix(key));
    if (this.removed === undefined) return { root, value: undefined };
    return { root: r.node, value: this.removed };
  }

  private removed: Uint8Array | undefined = undefined;

  /**
   * Go's `recursiveRemove`: returns the replacement of `node` (undefined when it was the removed leaf) and, when the
   * leftmost key of the subtree changed, the new leftmost key for the ancestor that must adopt it.
   */
  private removeIn(node: Node, key: ByteString, kp: number): { node: Node | undefined; newKey: ByteString | undefined } {
    if (node.height === 0) {
      if (compareToNode(key, kp, node) === 0) {
        this.removed = node.value ?? new Uint8Array(0);
        return { node: undefined, newKey: undefined };
      }
      return { node, newKey: undefined };
    }
    if (compareToNode(key, kp, node) < 0) {
      const r = this.removeIn(this.src.left(node), key, kp);
      if (this.removed === undefined) return { node, newKey: undefined };
      if (r.node === undefined) return { node: this.src.right(node), newKey: node.key };
      node = this.own(node);
      this.setLeft(node, r.node);
      this.measure(node);
      return { node: this.balance(node), newKey: r.newKey };
    }
    const r = this.removeIn(this.src.right(node), key, kp);
    if (this.removed === undefined) return { node, newKey: undefined };
    if (r.node === undefined) return { node: this.src.left(node), newKey: undefined };
    node = this.own(node);
    this.setRight(node, r.node);
    if (r.newKey !== undefined) node.setKey(r.newKey);
    this.measure(node);
    return { node: this.balance(node), newKey: undefined };
  }

  /** Go's `clone`: a working copy of an inner node. A node of the working version is already ours to change. */
  private own(node: Node): Node {
    if (node.version === this.version) {
      node.hash = undefined;
      return node;
    }
    const copy = new Node(node.key, undefined, this.version, node.height, node.size, node.kp);
    copy.left = node.left;
    copy.right = node.right;
    copy.leftVersion = node.leftVersion;
    copy.leftSeq = node.leftSeq;
    copy.rightVersion = node.rightVersion;
    copy.rightSeq = node.rightSeq;
    return copy;
  }

  private link(parent: Node, left: Node, right: Node): void {
    this.setLeft(parent, left);
    this.setRight(parent, right);
  }

  private setLeft(parent: Node, child: Node): void {
    parent.left = child;
    parent.leftSeq = 0;
  }

  private setRight(parent: Node, child: Node): void {
    parent.right = child;
    parent.rightSeq = 0;
  }

  private measure(node: Node): void {
    const l = this.src.left(node);
    const r = this.src.right(node);
    node.height = (l.height > r.height ? l.height : r.height) + 1;
    node.size = l.size + r.size;
  }

  private balanceOf(node: Node): number {
    return this.src.left(node).height - this.src.right(node).height;
  }

  private balance(node: Node): Node {
    const b = this.balanceOf(node);
    if (b > 1) {
      if (this.balanceOf(this.src.left(node)) >= 0) return this.rotateRight(node);
      this.setLeft(node, this.rotateLeft(this.src.left(node)));
      return this.rotateRight(node);
    }
    if (b < -1) {
      if (this.balanceOf(this.src.right(node)) <= 0) return this.rotateLeft(node);
      this.setRight(node, this.rotateRight(this.src.right(node)));
      return this.rotateLeft(node);
    }
    return node;
  }

  private rotateRight(node: Node): Node {
    node = this.own(node);
    const pivot = this.own(this.src.left(node));
    this.setLeft(node, this.src.right(pivot));
    this.setRight(pivot, node);
    this.measure(node);
    this.measure(pivot);
    return pivot;
  }

  private rotateLeft(node: Node): Node {
    node = this.own(node);
    const pivot = this.own(this.src.right(node));
    this.setRight(node, this.src.left(pivot));
    this.setLeft(pivot, node);
    this.measure(node);
    this.measure(pivot);
    return pivot;
  }
}
