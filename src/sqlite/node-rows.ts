/**
 * Nodes to rows and back: the one place where a tree node meets its stored form.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { childRef, NONE, type NodeTable } from "../tree/node.js";
import { decodeKids, encodeKids } from "./branch-kids.js";
import { pageHash, pageKey, PageWriter, subtreeStart, type DecodedPage } from "./page-codec.js";
import type { BranchRow, LeafRow } from "./rows.js";
import { isPageSeq, LEAF_BASE, leafId, leafSeq, PAGE_BASE, PAGE_LEAVES, PAGE_SLOTS, pageOfSeq, pageSeq, slotOfSeq } from "./shards.js";

export type { DecodedPage } from "./page-codec.js";

/** One writer for every page encoded: it keeps its buffer between pages. */
const pages = new PageWriter();

// In memory a leaf's sequence is -(id + 1), not the stored LEAF_BASE + id (≥ 2^31), so that its sign tells a leaf's
// node key from a branch's without the base. Branch sequences, and page nodes' (≥ PAGE_BASE), are the same in both
// forms. A leaf keeps its leaves row's sequence even inside a page: that row is its identity (values, the walks'
// check), and a leaf never heads a page of its own (its parent has at most 3 leaves), so no link names it by page.

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
  return seq >= PAGE_BASE || seq < LEAF_BASE ? seq : leafKeySeq(leafId(seq));
}

/** The row of hashed, numbered branch `n` of `t`, whose children are numbered too. */
export function branchRow(t: NodeTable, n: number): BranchRow {
  const l = childRef(t, n, true);
  const r = childRef(t, n, false);
  if (l === undefined || r === undefined || !t.hashed(n) || t.seq(n) === 0) {
    throw new IavlError("CORRUPT", `branch ${t.version(n)}/${t.seq(n)} cannot be stored: it is unhashed or a child is unnumbered`);
  }
  const row: BranchRow = {
    version: t.version(n),
    seq: t.seq(n),
    key: t.keyBytes(n),
    height: t.height(n),
    size: t.size(n),
    hash: t.hashBytes(n),
    leftVersion: l.version,
    leftSeq: storedSeq(l.seq),
    rightVersion: r.version,
    rightSeq: storedSeq(r.seq),
    kids: null,
  };
  // The children's records come from the children in memory or their stubs; a child known by node key alone (none
  // is, in the spine a checkpoint writes) leaves the row without them, as rows were before.
  const lr = t.childRecord(n, true);
  const rr = t.childRecord(n, false);
  if (lr !== NONE && rr !== NONE) {
    const area = t.hashArea();
    row.kids = encodeKids(row, { height: t.height(lr), size: t.size(lr), hashes: area, at: t.hashAt(lr) }, { height: t.height(rr), size: t.size(rr), hashes: area, at: t.hashAt(rr) });
  }
  return row;
}

/**
 * Branch row `b` as a node of `t`, its children known by node key only, with a stub of each where the row records
 * them (checked against the row's hash first: a damaged row is CORRUPT).
 */
export function branchNode(t: NodeTable, b: BranchRow): number {
  const kids = b.kids === null ? undefined : decodeKids(b, b.kids);
  const n = t.keyedBranch(b.key, b.version, b.height, b.size);
  t.setSeq(n, memorySeq(b.seq));
  t.linkLeft(n, b.leftVersion, memorySeq(b.leftSeq));
  t.linkRight(n, b.rightVersion, memorySeq(b.rightSeq));
  t.setHashBytes(n, b.hash);
  // Only a spine row's node holds stubs: see Mutator.measure.
  if (kids !== undefined && b.size > PAGE_LEAVES) {
    t.stub(n, true, b.leftVersion, kids.leftHeight, kids.leftSize, kids.bytes, kids.hashAt);
    t.stub(n, false, b.rightVersion, kids.rightHeight, kids.rightSize, kids.bytes, kids.hashAt + 32);
  }
  return n;
}

/** Leaves row `l` as a node of `t`: key and hash, its value left in the row. */
export function leafNode(t: NodeTable, l: LeafRow): number {
  const n = t.storedLeaf(l.key, 0, l.key.length, l.version);
  t.setHashBytes(n, l.hash);
  t.setSeq(n, leafKeySeq(l.id));
  return n;
}

/**
 * Numbers the subtree under `root` (every node in memory and hashed, every leaf with its leaves row) as page `id`:
 * its branches get their slots in it, and `renumbered` hears each with the sequence it had (a clean one moved into
 * the page, or 0), so that a failed write can undo and the caller can record what moved. Returns the row, or with
 * `keep` false only its length: {@link encodePage} then makes the row again when it is written, so that a
 * checkpoint of 60,000 pages never holds them all (at 10M keys they grew the process's malloc heap by ~110 MiB that
 * it kept).
 */
export function numberPage(t: NodeTable, root: number, id: number, keep: boolean, renumbered: (n: number, oldSeq: number) => void): Uint8Array | number {
  putPage(t, root, (n, slot) => {
    renumbered(n, t.seq(n));
    t.setSeq(n, pageSeq(id, slot));
  });
  return keep ? pages.finish() : pages.measure();
}

/** The row of page `root`, numbered by {@link numberPage}. */
export function encodePage(t: NodeTable, root: number): Uint8Array {
  putPage(t, root, () => {});
  return pages.finish();
}

/**
 * Adds the subtree under `root` to the page writer, in post-order, telling `branch` each branch's slot (the root's
 * is 0). The writer is left empty if it throws, and so are `measure` and `finish`.
 */
function putPage(t: NodeTable, root: number, branch: (n: number, slot: number) => void): void {
  const count = 2 * t.size(root) - 1;
  if (count > PAGE_SLOTS) throw new IavlError("CORRUPT", `a page of ${t.size(root)} leaves does not fit ${PAGE_SLOTS} slots`);
  const area = t.hashArea();
  // Post-order, by recursion: a page of at most 16 leaves is at most 6 levels deep.
  const put = (n: number): void => {
    if (!t.hashed(n)) throw new IavlError("CORRUPT", `node ${t.version(n)}/${t.seq(n)} cannot be stored in a page: it is unhashed`);
    if (t.height(n) === 0) {
      const seq = t.seq(n);
      if (seq >= 0) throw new IavlError("CORRUPT", `leaf ${t.version(n)} cannot be stored in a page: it has no leaves row`);
      pages.leaf(t.version(n), area, t.keyArea(), leafRowId(seq), t.hashAt(n), t.keyAt(n), t.keyLength(n));
      return;
    }
    const l = t.left(n);
    const r = t.right(n);
    if (l === NONE || r === NONE) throw new IavlError("CORRUPT", `branch ${t.version(n)}/${t.seq(n)} cannot be stored in a page: a child is not in memory`);
    put(l);
    put(r);
    branch(n, count - 1 - pages.branch(t.height(n), t.size(n), t.version(n), area, t.hashAt(n)));
  };
  try {
    put(root);
  } catch (e) {
    pages.drop();
    throw e;
  }
}

/** Makes the subtree of page `id` whose root is node `at` (post-order index) of `p` nodes of `t`; returns its root. */
export function pageNodes(t: NodeTable, id: number, p: DecodedPage, at: number): number {
  const start = subtreeStart(p, at);
  const ids = new Int32Array(at - start + 1);
  for (let i = start; i <= at; i++) {
    let n: number;
    if (p.height[i] === 0) {
      n = t.storedLeaf(p.bytes, p.keyAt[i]!, p.keyAt[i]! + p.keyLen[i]!, p.version[i]!);
      t.setSeq(n, leafKeySeq(p.leafId[i]!));
    } else {
      const r = p.right[i]!;
      // The branch's key is its right subtree's leftmost leaf's: the first node of that subtree's run.
      n = t.branch(ids[subtreeStart(p, r) - start]!, p.version[i]!, p.height[i]!, p.size[i]!);
      t.setLeft(n, ids[p.left[i]! - start]!);
      t.setRight(n, ids[r - start]!);
      t.setSeq(n, pageSeq(id, p.count - 1 - i));
    }
    t.setHashFrom(n, p.bytes, p.hashAt[i]!);
    ids[i - start] = n;
  }
  return ids[at - start]!;
}

/** The page and slot a page node's sequence names, or undefined for any other sequence. */
export function pageLink(seq: number): { id: number; slot: number } | undefined {
  return isPageSeq(seq) ? { id: pageOfSeq(seq), slot: slotOfSeq(seq) } : undefined;
}

/** The node key sequence of node `at` (post-order index) of page `id`. */
export function pagedSeq(id: number, p: DecodedPage, at: number): number {
  return pageSeq(id, p.count - 1 - at);
}

/** What branch `at` of page `p` stores, and the key it carries (its right subtree's leftmost leaf's, copied). */
export function pagedBranch(p: DecodedPage, at: number): { key: Uint8Array; height: number; hash: Uint8Array } {
  return { key: pageKey(p, subtreeStart(p, p.right[at]!)).slice(), height: p.height[at]!, hash: pageHash(p, at) };
}
