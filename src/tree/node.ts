/**
 * How the tree's algorithms reach nodes: a {@link NodeSource} over a {@link NodeTable}, which loads children kept
 * only in storage; key order against a node; hashing of what is not hashed yet.
 * @module
 */
import type { ByteString } from "../base/bytes.js";
import { digestBytes, EMPTY_DIGEST, sha256, type Digest } from "../base/hash.js";
import { NONE, type NodeTable } from "./node-table.js";

export { keyPrefix, NONE, NodeTable } from "./node-table.js";

/** Where a persisted node lives: its (version, sequence) node key, as in IAVL v2. */
export interface NodeKey {
  readonly version: number;
  readonly seq: number;
}

/** Byte order of `key` (whose {@link keyPrefix} is `kp`) against node `n`'s key. */
export function compareToNode(t: NodeTable, key: ByteString, kp: number, n: number): number {
  const d = kp - t.prefix(n);
  return d !== 0 ? d : t.compareKey(key, n);
}

/** The node key of `n`'s stored child on one side, or undefined when only a child in memory names it. */
export function childRef(t: NodeTable, n: number, left: boolean): NodeKey | undefined {
  const c = left ? t.left(n) : t.right(n);
  if (c !== NONE) return t.seq(c) === 0 ? undefined : { version: t.version(c), seq: t.seq(c) };
  const seq = left ? t.leftSeq(n) : t.rightSeq(n);
  return seq === 0 ? undefined : { version: left ? t.leftVersion(n) : t.rightVersion(n), seq };
}

/** Gives the children of a node, loading them from storage when they are not in memory. */
export interface NodeSource {
  /** The table the nodes live in. */
  readonly t: NodeTable;
  left(n: number): number;
  right(n: number): number;
  /** The value hash of a leaf (a store may keep it without the value). */
  valueHash(leaf: number): Digest;
  /**
   * For a source whose nodes may hold stubs: the most leaves a subtree stored as a page has. Only nodes of more hold
   * stubs, and the mutator loads a node's stubbed children into it when it becomes that small.
   */
  readonly pageLeaves?: number;
}

/** The source of a tree held wholly in memory: every child is present. */
export function memorySource(t: NodeTable): NodeSource {
  return {
    t,
    left(n: number): number {
      const c = t.left(n);
      if (c === NONE) throw new Error("iavlite: inner node without a left child in memory");
      return c;
    },
    right(n: number): number {
      const c = t.right(n);
      if (c === NONE) throw new Error("iavlite: inner node without a right child in memory");
      return c;
    },
    valueHash(leaf: number): Digest {
      const v = t.value(leaf);
      if (v === undefined) throw new Error("iavlite: leaf without a value in memory");
      return sha256(v);
    },
  };
}

/** Computes (and stores) the hash of `n` and of every unhashed node beneath it. */
export function hashNode(src: NodeSource, n: number): void {
  const t = src.t;
  if (!t.hashed(n)) hashDirty(src, t, n);
}

function hashDirty(src: NodeSource, t: NodeTable, n: number): void {
  if (t.height(n) === 0) {
    t.hashLeaf(n, src.valueHash(n));
    return;
  }
  // A clean child (most of them: one per changed path and level) costs a flag test, not a call; one known only by
  // node key gives its hash through its stub, when its parent has one, without a read.
  let l = t.left(n);
  if (l === NONE) l = t.leftStub(n) || src.left(n);
  if (!t.hashed(l)) hashDirty(src, t, l);
  let r = t.right(n);
  if (r === NONE) r = t.rightStub(n) || src.right(n);
  if (!t.hashed(r)) hashDirty(src, t, r);
  t.hashInner(n, l, r);
}

/** The root hash of the tree under `root` ({@link NONE}: empty), hashing what is not hashed yet. */
export function rootDigest(src: NodeSource, root: number): Digest {
  if (root === NONE) return EMPTY_DIGEST;
  hashNode(src, root);
  return src.t.digest(root);
}

/** {@link rootDigest} as the 32 bytes a caller may keep. */
export function rootHash(src: NodeSource, root: number): Uint8Array {
  return digestBytes(rootDigest(src, root));
}
