/**
 * Nodes to rows and back: the one place where a tree node meets its stored form.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { latin1, latin1Bytes } from "../base/bytes.js";
import { digestBytes, toDigest } from "../base/hash.js";
import { Node, type NodeKey } from "../tree/node.js";
import type { BranchLinks, BranchRow, LeafRow } from "../sqlite/rows.js";
import { leafId, leafSeq } from "../sqlite/shards.js";

/** The key of a node known only by its links. */
const NO_KEY = "";

/** The row of a hashed, numbered branch whose children are numbered too. */
export function branchRow(n: Node): BranchRow {
  const l = n.left ?? n.leftKey;
  const r = n.right ?? n.rightKey;
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
    leftSeq: l.seq,
    rightVersion: r.version,
    rightSeq: r.seq,
  };
}

/** The row of a hashed, numbered leaf. */
export function leafRow(n: Node): LeafRow {
  if (n.hash === undefined || n.seq === 0) throw new IavlError("CORRUPT", `leaf ${n.version}/${n.seq} cannot be stored: it is unhashed or unnumbered`);
  return { version: n.version, id: leafId(n.seq), key: latin1Bytes(n.key), hash: digestBytes(n.hash) };
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
  n.seq = b.seq;
  n.leftKey = { version: b.leftVersion, seq: b.leftSeq };
  n.rightKey = { version: b.rightVersion, seq: b.rightSeq };
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
  n.seq = leafSeq(l.id);
  return n;
}
