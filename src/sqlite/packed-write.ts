/**
 * Rows packed into two buffers (numbers, bytes) for a trip between threads: transferred, not structured-cloned, so
 * values cross threads without a copy per value or per object. A {@link VersionWrite} goes so to the writer thread,
 * and pages of leaves rows come so from the leaf thread.
 * @module
 */
import type { BranchRow, LeafWrite, PageWrite, VersionRow, VersionRows, VersionWrite } from "./rows.js";

/** Rows as two transferable buffers (which may be longer than what the rows use). */
export interface PackedWrite {
  nums: Float64Array;
  bytes: Uint8Array;
}

/** A packed version, with how much of each buffer it fills (what a journal stores of it). */
export interface PackedVersion extends PackedWrite {
  numsUsed: number;
  bytesUsed: number;
}

/** A position in packed rows: the next number, the next byte. */
export interface Cursor {
  i: number;
  at: number;
}

/** Byte strings go in as their length among the numbers (−1: null) and their bytes after the previous ones. */
export function putBytes(p: PackedWrite, c: Cursor, b: Uint8Array | null): void {
  p.nums[c.i++] = b === null ? NULL : b.length;
  if (b !== null) {
    p.bytes.set(b, c.at);
    c.at += b.length;
  }
}

/** The next byte string at `c` (a view of `p.bytes`), or null. */
export function takeBytes(p: PackedWrite, c: Cursor): Uint8Array | null {
  const len = p.nums[c.i++]!;
  if (len === NULL) return null;
  const b = p.bytes.subarray(c.at, c.at + len);
  c.at += len;
  return b;
}

/** Buffers of earlier packed writes that may be packed into again. */
export interface SpareBuffers {
  nums: Float64Array[];
  bytes: Uint8Array[];
}

/** Takes from `spares` the shortest buffer holding at least `n` elements, or makes one. */
function reuse<T extends Float64Array | Uint8Array>(spares: T[], n: number, make: (n: number) => T): T {
  let best = -1;
  spares.forEach((b, i) => {
    if (b.length >= n && (best < 0 || b.length < spares[best]!.length)) best = i;
  });
  return best < 0 ? make(n) : spares.splice(best, 1)[0]!;
}

/** Bytes of a byte string field, or −1 for null. */
const NULL = -1;

/** The total bytes a write carries (keys, hashes, values, operations): what it costs in flight. */
export function writeBytes(w: VersionWrite): number {
  let n = w.version.hash.length + w.ops.length + w.orphans.length;
  for (const [, nodes] of w.laterOrphans) n += nodes.length;
  for (const l of w.leaves) n += l.key.length + (l.hash?.length ?? 0) + (l.value?.length ?? 0);
  return n + w.branches.bytes + w.pages.bytes;
}

/**
 * Numbers a packed write carries: the header, the lengths of hash, ops and orphans, then per row its numbers and
 * lengths, then per earlier version's orphans its version and length.
 */
const HEADER = 16;
const LEAF_NUMS = 4;
const BRANCH_NUMS = 11;
const PAGE_NUMS = 3;

/**
 * Packs `w` (its `bytes` as {@link writeBytes} counts them), into spare buffers where they are long enough; the
 * result's buffers can be transferred.
 */
export function packWrite(w: VersionWrite, spares: SpareBuffers = { nums: [], bytes: [] }, bytes = writeBytes(w)): PackedVersion {
  const v = w.version;
  const rows = w.leaves.length * LEAF_NUMS + w.branches.count * BRANCH_NUMS + w.pages.count * PAGE_NUMS + w.laterOrphans.length * 2;
  const nums = reuse(spares.nums, HEADER + 3 + rows, (n) => new Float64Array(n));
  nums.set([v.version, v.size, v.checkpoint ? 1 : 0, v.rootVersion ?? NULL, v.rootSeq ?? NULL, v.ops, v.firstLeaf ?? NULL, v.leafRows ?? NULL]);
  nums.set([w.firstLeaf, w.leaves.length, w.branches.count, w.pages.count], 8);
  const done = w.completes;
  nums.set([done?.version ?? NULL, done?.rootVersion ?? NULL, done?.rootSeq ?? NULL, w.laterOrphans.length], 12);
  const p: PackedWrite = { nums, bytes: reuse(spares.bytes, bytes, (n) => new Uint8Array(n)) };
  const c: Cursor = { i: HEADER, at: 0 };
  putBytes(p, c, v.hash);
  putBytes(p, c, w.ops);
  putBytes(p, c, w.orphans);
  for (const l of w.leaves) {
    nums[c.i++] = l.id;
    putBytes(p, c, l.key);
    putBytes(p, c, l.hash);
    putBytes(p, c, l.value);
  }
  for (const b of w.branches) {
    nums.set([b.version, b.seq, b.height, b.size, b.leftVersion, b.leftSeq, b.rightVersion, b.rightSeq], c.i);
    c.i += 8;
    putBytes(p, c, b.key);
    putBytes(p, c, b.hash);
    putBytes(p, c, b.kids);
  }
  for (const g of w.pages) {
    nums[c.i++] = g.id;
    nums[c.i++] = g.version;
    putBytes(p, c, g.bytes);
  }
  for (const [version, nodes] of w.laterOrphans) {
    nums[c.i++] = version;
    putBytes(p, c, nodes);
  }
  return { ...p, numsUsed: c.i, bytesUsed: c.at };
}

/**
 * The write packed in `p`. Its rows are read from the buffers as they are iterated, not all made up front (a
 * checkpoint carries hundreds of thousands of branches), and can be iterated again (a write that met a lock is
 * retried); byte strings are views of `p.bytes`.
 */
export function unpackWrite(p: PackedWrite): VersionRows {
  const n = p.nums;
  const [version, size, checkpoint, rootVersion, rootSeq, ops, rowFirst, rowCount, firstLeaf, leafCount, branchCount, pageCount, doneVersion, doneRootVersion, doneRootSeq, laterCount] =
    n.subarray(0, HEADER);
  const c: Cursor = { i: HEADER, at: 0 };
  const row: VersionRow = {
    version: version!,
    hash: takeBytes(p, c)!,
    size: size!,
    checkpoint: checkpoint === 1,
    rootVersion: rootVersion === NULL ? null : rootVersion!,
    rootSeq: rootSeq === NULL ? null : rootSeq!,
    ops: ops!,
    firstLeaf: rowFirst === NULL ? null : rowFirst!,
    leafRows: rowCount === NULL ? null : rowCount!,
  };
  const packedOps = takeBytes(p, c)!;
  const orphans = takeBytes(p, c)!;
  const leavesAt: Cursor = { ...c };
  // The branches start after the leaves: step over their numbers, adding up their byte lengths.
  for (let k = 0; k < leafCount!; k++) {
    c.i++;
    for (let f = 0; f < 3; f++) {
      const len = n[c.i++]!;
      if (len !== NULL) c.at += len;
    }
  }
  const branchesAt: Cursor = { ...c };
  // The pages start after the branches: 8 numbers and three lengths each (kids may be null).
  for (let k = 0; k < branchCount!; k++) {
    c.i += 8;
    for (let f = 0; f < 3; f++) {
      const len = n[c.i++]!;
      if (len !== NULL) c.at += len;
    }
  }
  const pagesAt: Cursor = { ...c };
  // The earlier versions' orphans come after the pages: 1 number and a length each.
  for (let k = 0; k < pageCount!; k++) {
    c.i += 2;
    c.at += n[c.i++]!;
  }
  const laterOrphans: Array<[number, Uint8Array]> = [];
  for (let k = 0; k < laterCount!; k++) laterOrphans.push([n[c.i++]!, takeBytes(p, c)!]);
  const completes = doneVersion === NULL ? undefined : { version: doneVersion!, rootVersion: doneRootVersion!, rootSeq: doneRootSeq! };
  const leaves = {
    *[Symbol.iterator](): Generator<LeafWrite> {
      const r = { ...leavesAt };
      for (let k = 0; k < leafCount!; k++) yield { id: n[r.i++]!, key: takeBytes(p, r)!, hash: takeBytes(p, r), value: takeBytes(p, r) };
    },
  };
  const branches = {
    *[Symbol.iterator](): Generator<BranchRow> {
      const r = { ...branchesAt };
      for (let k = 0; k < branchCount!; k++) {
        const i = r.i;
        r.i += 8;
        yield { version: n[i]!, seq: n[i + 1]!, height: n[i + 2]!, size: n[i + 3]!, leftVersion: n[i + 4]!, leftSeq: n[i + 5]!, rightVersion: n[i + 6]!, rightSeq: n[i + 7]!, key: takeBytes(p, r)!, hash: takeBytes(p, r)!, kids: takeBytes(p, r) };
      }
    },
  };
  const pages = {
    *[Symbol.iterator](): Generator<PageWrite> {
      const r = { ...pagesAt };
      for (let k = 0; k < pageCount!; k++) {
        const id = n[r.i++]!;
        const version = n[r.i++]!;
        yield { id, version, bytes: takeBytes(p, r)! };
      }
    },
  };
  return { version: row, leaves, firstLeaf: firstLeaf!, ops: packedOps, branches, pages, orphans, laterOrphans, completes };
}
