/**
 * A {@link VersionWrite} packed into two buffers (numbers, bytes) for the trip to the writer thread: transferred, not
 * structured-cloned, so a version's values cross threads without a copy per value or per object.
 * @module
 */
import type { BranchRow, LeafWrite, VersionRow, VersionWrite } from "./rows.js";

/** A version write as two transferable buffers. */
export interface PackedWrite {
  nums: Float64Array;
  bytes: Uint8Array;
}

/** Bytes of a byte string field, or −1 for null. */
const NULL = -1;

/** The total bytes a write carries (keys, hashes, values, operations): what it costs in flight. */
export function writeBytes(w: VersionWrite): number {
  let n = w.version.hash.length + w.ops.length;
  for (const l of w.leaves) n += l.key.length + (l.hash?.length ?? 0) + (l.value?.length ?? 0);
  for (const b of w.branches) n += b.key.length + b.hash.length;
  return n;
}

/** Packs `w`; the result's buffers can be transferred. */
export function packWrite(w: VersionWrite): PackedWrite {
  const v = w.version;
  const nums: number[] = [v.version, v.size, v.checkpoint ? 1 : 0, v.rootVersion ?? NULL, v.rootSeq ?? NULL, v.ops, v.firstLeaf ?? NULL, v.leafRows ?? NULL];
  nums.push(w.firstLeaf, w.leaves.length, w.branches.length);
  const bytes = new Uint8Array(writeBytes(w));
  let p = 0;
  const put = (b: Uint8Array | null): void => {
    nums.push(b === null ? NULL : b.length);
    if (b !== null) {
      bytes.set(b, p);
      p += b.length;
    }
  };
  put(v.hash);
  put(w.ops);
  for (const l of w.leaves) {
    nums.push(l.id);
    put(l.key);
    put(l.hash);
    put(l.value);
  }
  for (const b of w.branches) {
    nums.push(b.version, b.seq, b.height, b.size, b.leftVersion, b.leftSeq, b.rightVersion, b.rightSeq);
    put(b.key);
    put(b.hash);
  }
  return { nums: Float64Array.from(nums), bytes };
}

/** The write packed in `p`; its byte strings are views of `p.bytes`. */
export function unpackWrite(p: PackedWrite): VersionWrite {
  let i = 0;
  let at = 0;
  const num = (): number => p.nums[i++]!;
  const take = (): Uint8Array | null => {
    const len = num();
    if (len === NULL) return null;
    const b = p.bytes.subarray(at, at + len);
    at += len;
    return b;
  };
  const [version, size, checkpoint, rootVersion, rootSeq, ops, rowFirst, rowCount] = [num(), num(), num(), num(), num(), num(), num(), num()];
  const [firstLeaf, leafCount, branchCount] = [num(), num(), num()];
  const row: VersionRow = {
    version,
    hash: take()!,
    size,
    checkpoint: checkpoint === 1,
    rootVersion: rootVersion === NULL ? null : rootVersion,
    rootSeq: rootSeq === NULL ? null : rootSeq,
    ops,
    firstLeaf: rowFirst === NULL ? null : rowFirst,
    leafRows: rowCount === NULL ? null : rowCount,
  };
  const packedOps = take()!;
  const leaves: LeafWrite[] = [];
  for (let n = 0; n < leafCount; n++) leaves.push({ id: num(), key: take()!, hash: take(), value: take() });
  const branches: BranchRow[] = [];
  for (let n = 0; n < branchCount; n++) {
    const [bv, seq, height, bsize, leftVersion, leftSeq, rightVersion, rightSeq] = [num(), num(), num(), num(), num(), num(), num(), num()];
    branches.push({ version: bv, seq, height, size: bsize, leftVersion, leftSeq, rightVersion, rightSeq, key: take()!, hash: take()! });
  }
  return { version: row, leaves, firstLeaf, ops: packedOps, branches };
}
