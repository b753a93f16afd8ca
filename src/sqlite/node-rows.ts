/**
 * Nodes to rows and back: the one place where a tree node meets its stored form.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { latin1, latin1Bytes } from "../base/bytes.js";
import { childRef, type NodeTable } from "../tree/node.js";
import type { BranchRow, LeafRow } from "./rows.js";
import { LEAF_BASE, leafId, leafSeq } from "./shards.js";

// In memory a leaf's sequence is -(id + 1), not the stored LEAF_BASE + id (≥ 2^31), so that its sign tells a leaf's
// node key from a branch's without the base. Branch sequences are the same in both forms.

/** The in-memory sequence of the leaf in leaves row `id`. */
export function leafKeySeq(id: number): number {
  return -id - 1;
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
  return seq >= LEAF_BASE ? leafKeySeq(leafId(seq)) : seq;
}

/** The row of hashed, numbered branch `n` of `t`, whose children are numbered too. */
export function branchRow(t: NodeTable, n: number): BranchRow {
  const l = childRef(t, n, true);
  const r = childRef(t, n, false);
  if (l === undefined || r === undefined || !t.hashed(n) || t.seq(n) === 0) {
    throw new IavlError("CORRUPT", `branch ${t.version(n)}/${t.seq(n)} cannot be stored: it is unhashed or a child is unnumbered`);
  }
  return {
    version: t.version(n),
    seq: t.seq(n),
    key: latin1Bytes(t.key(n)),
    height: t.height(n),
    size: t.size(n),
    hash: t.hashBytes(n),
    leftVersion: l.version,
    leftSeq: storedSeq(l.seq),
    rightVersion: r.version,
    rightSeq: storedSeq(r.seq),
  };
}

/** Branch row `b` as a node of `t`, its children known by node key only. */
export function branchNode(t: NodeTable, b: BranchRow): number {
  const n = t.keyedBranch(latin1(b.key), b.version, b.height, b.size);
  t.setSeq(n, memorySeq(b.seq));
  t.linkLeft(n, b.leftVersion, memorySeq(b.leftSeq));
  t.linkRight(n, b.rightVersion, memorySeq(b.rightSeq));
  t.setHashBytes(n, b.hash);
  return n;
}

/** Leaves row `l` as a node of `t`: key and hash, its value left in the row. */
export function leafNode(t: NodeTable, l: LeafRow): number {
  const n = t.leaf(latin1(l.key), undefined, l.version);
  t.setHashBytes(n, l.hash);
  t.setSeq(n, leafKeySeq(l.id));
  return n;
}
