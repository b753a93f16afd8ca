/**
 * The in-memory IAVL node and the loader that fills in children kept only in storage.
 * @module
 */
import { compareLatin1, type ByteString } from "../base/bytes.js";
import { innerHash, leafHash, sha256, type Digest } from "../base/hash.js";

/**
 * The first three bytes of a key as a small integer (zero-padded). Lookups compare it first and read the key's
 * string only on a tie: a walk down the tree then touches one object per level instead of two.
 */
export function keyPrefix(k: ByteString): number {
  const n = k.length;
  return ((n > 0 ? k.charCodeAt(0) : 0) << 16) | ((n > 1 ? k.charCodeAt(1) : 0) << 8) | (n > 2 ? k.charCodeAt(2) : 0);
}

/** Byte order of `key` (whose prefix is `kp`) against `node`'s key. Zero padding keeps the order of unequal prefixes. */
export function compareToNode(key: ByteString, kp: number, node: Node): number {
  const d = kp - node.kp;
  return d !== 0 ? d : compareLatin1(key, node.key);
}

/** Where a persisted node lives: its (version, sequence) node key, as in IAVL v2. */
export interface NodeKey {
  readonly version: number;
  readonly seq: number;
}

/**
 * One node of the tree. Leaves (height 0) hold a key and value; inner nodes hold the smallest key of their right
 * subtree and two children. A node whose `version` equals the version being built belongs to the working tree
 * only and may be changed in place; every other node is shared with committed versions and is never changed.
 */
export class Node {
  /** Hash, computed lazily; undefined while the node is part of the working tree and changed since. */
  hash: Digest | undefined = undefined;
  /** In-memory children; undefined when only the child's node key is known (evicted or not yet loaded). */
  left: Node | undefined = undefined;
  right: Node | undefined = undefined;
  /**
   * Storage identity of the node and of its children; `seq` 0 means not written yet, or for a child, named only by
   * the child in memory. Plain numbers rather than {@link NodeKey} objects: a branch loaded from storage would
   * otherwise carry two more heap objects (~120 bytes).
   */
  seq = 0;
  leftVersion = 0;
  leftSeq = 0;
  rightVersion = 0;
  rightSeq = 0;

  constructor(
    /** The key's bytes as a latin1 string (see {@link ByteString}). */
    public key: ByteString,
    /** The value of a leaf; undefined for inner nodes, and for leaves whose value was not loaded. */
    public value: Uint8Array | undefined,
    public version: number,
    public height: number,
    public size: number,
    /** {@link keyPrefix} of `key`, passed by a copy so that it need not read the key again. */
    public kp = keyPrefix(key),
  ) {}

  /** Changes the key (an inner node adopting a new leftmost key of its right subtree). */
  setKey(key: ByteString): void {
    this.key = key;
    this.kp = keyPrefix(key);
  }

  /** A new leaf. */
  static leaf(key: ByteString, value: Uint8Array, version: number): Node {
    return new Node(key, value, version, 0, 1);
  }

  /** True for leaves. */
  isLeaf(): boolean {
    return this.height === 0;
  }
}

/** The node key of `n`'s stored child on one side, or undefined when only a child in memory names it. */
export function childRef(n: Node, left: boolean): NodeKey | undefined {
  const seq = left ? n.leftSeq : n.rightSeq;
  return seq === 0 ? undefined : { version: left ? n.leftVersion : n.rightVersion, seq };
}

/** Gives the children of a node, loading them from storage when they are not in memory. */
export interface NodeSource {
  left(node: Node): Node;
  right(node: Node): Node;
  /** The value hash of a leaf (a store may keep it without the value). */
  valueHash(leaf: Node): Digest;
}

/** The source of a tree held wholly in memory: every child is present. */
export const MEMORY_SOURCE: NodeSource = {
  left(node: Node): Node {
    const n = node.left;
    if (n === undefined) throw new Error("iavlite: inner node without a left child in memory");
    return n;
  },
  right(node: Node): Node {
    const n = node.right;
    if (n === undefined) throw new Error("iavlite: inner node without a right child in memory");
    return n;
  },
  valueHash(leaf: Node): Digest {
    if (leaf.value === undefined) throw new Error("iavlite: leaf without a value in memory");
    return sha256(leaf.value);
  },
};

/** Computes (and caches) the hash of `node` and of every unhashed node beneath it. */
export function hashNode(node: Node, src: NodeSource): Digest {
  if (node.hash !== undefined) return node.hash;
  if (node.height === 0) {
    node.hash = leafHash(node.key, src.valueHash(node), node.version);
  } else {
    const l = hashNode(src.left(node), src);
    const r = hashNode(src.right(node), src);
    node.hash = innerHash(node.height, node.size, node.version, l, r);
  }
  return node.hash;
}
