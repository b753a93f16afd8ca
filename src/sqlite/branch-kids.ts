/**
 * The `kids` column of a branch row (migration 007): what the row's node needs of its children to be rehashed,
 * resized and balanced without reading them — their heights, sizes and hashes — so that a change past the memory
 * budget reads the rows of its path and never a sibling's.
 *
 * ```
 * format (1)  left height (1)  right height (1)  left size (uvarint)  left hash (32)  right hash (32)  sum (4)
 * ```
 *
 * The right size is the node's size less the left's. The sum is a CRC-32 of the bytes before it and of the row's key
 * and child node keys; together with the node's own hash, which must be the hash of these two children, a damaged row
 * is refused with `CORRUPT` when it is read.
 * @module
 */
import { ByteReader, putUvarint } from "../base/bytes.js";
import { innerHashOf } from "../base/hash.js";
import { IavlError } from "../base/errors.js";
import { crc32 } from "./row-sum.js";
import type { BranchRow } from "./rows.js";

const FORMAT = 1;
const HASH = 32;
/** The most bytes a kids record takes (for sizing buffers). */
export const KIDS_BYTES = 3 + 10 + 2 * HASH + 4;

/** One child as a branch row records it. */
export interface KidRecord {
  height: number;
  size: number;
  /** The child's hash: 32 bytes of `hashes` from `at`. */
  hashes: Uint8Array;
  at: number;
}

/** A row's children as decoded: views of the row's bytes. */
export interface Kids {
  leftHeight: number;
  rightHeight: number;
  leftSize: number;
  rightSize: number;
  /** The kids bytes: the left hash at `hashAt`, the right one 32 bytes on. */
  bytes: Uint8Array;
  hashAt: number;
}

const linkBytes = new Uint8Array(32);
const links = new DataView(linkBytes.buffer);

/** The sum over the kids bytes before it, and the row's key and child node keys. */
function sumOf(b: Pick<BranchRow, "key" | "leftVersion" | "leftSeq" | "rightVersion" | "rightSeq">, body: Uint8Array): number {
  links.setFloat64(0, b.leftVersion, true);
  links.setFloat64(8, b.leftSeq, true);
  links.setFloat64(16, b.rightVersion, true);
  links.setFloat64(24, b.rightSeq, true);
  return crc32(body, crc32(linkBytes, crc32(b.key)));
}

/** The kids bytes of a branch row with these children. */
export function encodeKids(b: Pick<BranchRow, "key" | "leftVersion" | "leftSeq" | "rightVersion" | "rightSeq">, l: KidRecord, r: KidRecord): Uint8Array {
  const buf = new Uint8Array(KIDS_BYTES);
  buf[0] = FORMAT;
  buf[1] = l.height;
  buf[2] = r.height;
  let p = putUvarint(buf, 3, l.size);
  buf.set(l.hashes.subarray(l.at, l.at + HASH), p);
  buf.set(r.hashes.subarray(r.at, r.at + HASH), p + HASH);
  p += 2 * HASH;
  new DataView(buf.buffer).setUint32(p, sumOf(b, buf.subarray(0, p)));
  return buf.slice(0, p + 4);
}

/**
 * The children branch row `b` records, checked: the sum, the shape (heights an AVL node of `b.height` can have,
 * sizes that add up), and `b`'s hash as the hash of these children.
 */
export function decodeKids(b: BranchRow, kids: Uint8Array): Kids {
  const bad = (why: string): IavlError => new IavlError("CORRUPT", `branch ${b.version}/${b.seq}: its record of its children ${why}`);
  const r = new ByteReader(kids, () => bad("is cut short"));
  if (r.byte() !== FORMAT) throw bad("has an unknown format");
  const leftHeight = r.byte();
  const rightHeight = r.byte();
  const leftSize = r.uvarint();
  const hashAt = r.pos;
  r.view(2 * HASH);
  const end = r.pos;
  r.view(4);
  if (!r.done) throw bad("has bytes past its end");
  if (new DataView(kids.buffer, kids.byteOffset).getUint32(end) !== sumOf(b, kids.subarray(0, end))) throw bad("fails its checksum");
  const rightSize = b.size - leftSize;
  const tall = Math.max(leftHeight, rightHeight);
  if (tall + 1 !== b.height || Math.abs(leftHeight - rightHeight) > 1 || leftSize < 1 || rightSize < 1) throw bad("does not fit the node's height and size");
  const d = innerHashOf(b.height, b.size, b.version, kids, hashAt, hashAt + HASH);
  for (let k = 0; k < HASH; k++) if (d.charCodeAt(k) !== b.hash[k]) throw bad("does not hash to the node's hash");
  return { leftHeight, rightHeight, leftSize, rightSize, bytes: kids, hashAt };
}
