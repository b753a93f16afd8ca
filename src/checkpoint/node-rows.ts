/**
 * Nodes to rows and back: the one place where a tree node meets its stored form.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { latin1, latin1Bytes } from "../base/bytes.js";
import { digestBytes, toDigest } from "../base/hash.js";
import { childRef, Node, type NodeKey } from "../tree/node.js";
import type { BranchLinks, BranchRow, LeafRow } from "../sqlite/rows.js";
import { LEAF_BASE, leafId, leafSeq } from "../sqlite/shards.js";

/** The key of a node known only by its links. */
const NO_KEY = "";

// In memory a leaf's sequence is -(id + 1), not the stored LEAF_BASE + id (≥ 2^31): once a number field of a class
// holds a value that is not a small integer (31 bits and sign), V8 boxes that field in every instance, which cost
// three 16-byte boxes a node (seq, leftSeq, rightSeq). Branch sequences are the same in both forms.

/** The in-memory sequence of the leaf in leaves row `id`. */
export function leafKeySeq(id: number): number {
  const s = -id - 1;
  // Arithmetic on a boxed number (a stored sequence is one) gives a boxed result, integral or not: `| 0` unboxes it.
  return (s | 0) === s ? s | 0 : s;
}

/** The leaves row of a leaf's in-memory sequence. */
export function leafRowId(seq: number): number {
  return -seq - 1;
}

/** A sequence as stored (in branch rows and version rows) from its in-memory form. */
export function storedSeq(seq: number): number {
  return seq < 0 ? leafSeq(leafRowId(seq)) : seq;
}

/** A stored sequence in its in-memory form. */
export function memorySeq(seq: number): number {
  // A branch's is below 2^31, but may come boxed from a row object whose field also holds leaf sequences.
  return seq >= LEAF_BASE ? leafKeySeq(leafId(seq)) : seq | 0;
}

/** The row of a hashed, numbered branch whose children are numbered too. */
export function branchRow(n: Node): BranchRow {
  const l = n.left ?? childRef(n, true);
  const r = n.right ?? childRef(n, false);
  if (l === undefined || r === undefined || n.hash === undefined || n.seq === 0 || l.seq === 0 || r.seq === 0) {
    throw new IavlError("CORRUPT", `branch ${n.version}/${n.seq} cannot be stored: it is unhashed or a child is unnumbered`);
  }
  return {
    version: n.version,
    seq: n.seq,
    key: latin1Bytes(n.key),
    height: n.height,
    size: n.size,
    hash: digestBytes(n.hash),
    leftVersion: l.version,
    leftSeq: storedSeq(l.seq),
    rightVersion: r.version,
    rightSeq: storedSeq(r.seq),
  };
}

/** The row of a hashed, numbered leaf. */
export function leafRow(n: Node): LeafRow {
  if (n.hash === undefined || n.seq === 0) throw new IavlError("CORRUPT", `leaf ${n.version}/${n.seq} cannot be stored: it is unhashed or unnumbered`);
  return { version: n.version, id: leafRowId(n.seq), key: latin1Bytes(n.key), hash: digestBytes(n.hash) };
}

/** A branch loaded from its row: children known by node key only. */
export function branchNode(b: BranchRow): Node {
  const n = linked(new Node(latin1(b.key), undefined, b.version, b.height, b.size), b);
  n.hash = toDigest(b.hash);
  return n;
}

/**
 * A branch known by its links alone (see StoreReader.branchLinks), for a walk of the tree's shape: it has no key,
 * hash or size, and its height of 1 says only that it is a branch.
 */
export function linkNode(b: BranchLinks): Node {
  return linked(new Node(NO_KEY, undefined, b.version, 1, 0), b);
}

/** Gives branch `n` the node keys of itself and its children from `b`. */
function linked(n: Node, b: BranchLinks): Node {
  n.seq = memorySeq(b.seq);
  n.leftVersion = b.leftVersion;
  n.leftSeq = memorySeq(b.leftSeq);
  n.rightVersion = b.rightVersion;
  n.rightSeq = memorySeq(b.rightSeq);
  return n;
}

/** A leaf known by its node key alone, for a walk that reads leaves rows apart from the tree's shape. */
export function leafStub(ref: NodeKey): Node {
  const n = new Node(NO_KEY, undefined, ref.version, 0, 1);
  n.seq = ref.seq;
  return n;
}

/** A leaf loaded from its row: key and hash, its value left in the value rows. */
export function leafNode(l: LeafRow): Node {
  const n = new Node(latin1(l.key), undefined, l.version, 0, 1);
  n.hash = toDigest(l.hash);
  n.seq = leafKeySeq(l.id);
  return n;
}
