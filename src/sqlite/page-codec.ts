/**
 * The bytes of a page row (layout 3): one canonical subtree of a checkpoint's tree, its nodes in post-order, so that
 * every subtree of the page is a contiguous run ending at its root and a node's children sit just before it.
 *
 * ```
 * format (1)  count (1)  then per node:
 *   height (1)  size (uvarint)  version (uvarint)  hash (32)
 *   leaf:   key length (uvarint)  key  leaves row id (uvarint)
 *   branch: left index (1)  right index (1)
 * ```
 *
 * A branch's key is not stored: it is the key of the leftmost leaf of its right subtree, the first node of that
 * subtree's run. Values stay in `leaves`. The decoder checks the whole shape (indices, sizes, heights, balance, leaf
 * order) so that a damaged row is refused with `CORRUPT` when it is read, not when a hash built on it is published.
 * @module
 */
import { ByteReader, compareBytes, putLatin1, putUvarint, type ByteString } from "../base/bytes.js";
import { IavlError } from "../base/errors.js";

/** The only format written so far. */
const FORMAT = 1;
/** Nodes a page may hold (indices are one byte). */
export const MAX_PAGE_NODES = 255;
const HASH = 32;

/** A page's nodes, decoded into parallel arrays by post-order index (no object per node). */
export interface DecodedPage {
  readonly count: number;
  /** The row's bytes: hashes and keys are views of them. */
  readonly bytes: Uint8Array;
  readonly height: Uint8Array;
  readonly size: Float64Array;
  readonly version: Float64Array;
  /** Byte offset of each node's hash. */
  readonly hashAt: Int32Array;
  /** Leaves: byte offset and length of the key, and the leaves row id; branches: −1, −1, −1. */
  readonly keyAt: Int32Array;
  readonly keyLen: Int32Array;
  readonly leafId: Float64Array;
  /** Branches: the indices of their children; leaves: −1. */
  readonly left: Int16Array;
  readonly right: Int16Array;
}

/** The hash of node `i` (a view of the row). */
export function pageHash(p: DecodedPage, i: number): Uint8Array {
  return p.bytes.subarray(p.hashAt[i]!, p.hashAt[i]! + HASH);
}

/** The key of leaf `i` (a view of the row). */
export function pageKey(p: DecodedPage, i: number): Uint8Array {
  return p.bytes.subarray(p.keyAt[i]!, p.keyAt[i]! + p.keyLen[i]!);
}

/** The index of the first node of the subtree whose root is `i` (its leftmost leaf). */
export function subtreeStart(p: Pick<DecodedPage, "size">, i: number): number {
  return i - 2 * p.size[i]! + 2;
}

/**
 * Builds a page row node by node, children before parents; `finish` hands the row out and starts the next, so one
 * writer serves a whole checkpoint. Hashes are copied from wherever they sit (`hash` at `hashAt`) and keys may come
 * as latin1 strings, so that encoding a page allocates nothing but the row.
 */
export class PageWriter {
  private buf = new Uint8Array(4096);
  private pos = 2;
  private count = 0;
  /** Sizes so far, to derive the children of each branch. */
  private readonly sizes = new Float64Array(MAX_PAGE_NODES);

  /**
   * Adds a leaf; returns its index. Its key is `key`, or bytes `keyAt` … `keyAt + keyLen` − 1 of it where it is an
   * array (a node table's key area).
   */
  leaf(version: number, hash: Uint8Array, key: Uint8Array | ByteString, leafId: number, hashAt = 0, keyAt = 0, keyLen = key.length): number {
    this.room(20 + HASH + keyLen + 10);
    this.head(0, 1, version, hash, hashAt);
    const buf = this.buf;
    let pos = putUvarint(buf, this.pos, keyLen);
    if (typeof key === "string") pos = putLatin1(buf, pos, key);
    else for (let k = 0; k < keyLen; k++) buf[pos++] = key[keyAt + k]!;
    this.pos = putUvarint(buf, pos, leafId);
    return this.added(1);
  }

  /** Adds a branch over the two subtrees just before it; returns its index. */
  branch(height: number, size: number, version: number, hash: Uint8Array, hashAt = 0): number {
    const i = this.count;
    const right = i - 1;
    const left = right - (2 * this.sizes[right]! - 1);
    if (left < 0 || this.sizes[left]! + this.sizes[right]! !== size) throw new IavlError("CORRUPT", `a page branch of size ${size} does not sit over its two subtrees`);
    this.room(20 + HASH + 2);
    this.head(height, size, version, hash, hashAt);
    this.buf[this.pos++] = left;
    this.buf[this.pos++] = right;
    return this.added(size);
  }

  /** The row; the writer is empty again. */
  finish(): Uint8Array {
    const count = this.count;
    const row = this.buf.slice(0, this.pos);
    this.end();
    row[0] = FORMAT;
    row[1] = count;
    return row;
  }

  /** The row's length in bytes, without the row; the writer is empty again. */
  measure(): number {
    const n = this.pos;
    this.end();
    return n;
  }

  private end(): void {
    const count = this.count;
    const whole = count > 0 && 2 * this.sizes[count - 1]! - 1 === count;
    this.drop();
    if (!whole) throw new IavlError("CORRUPT", "a page must hold one whole subtree");
  }

  /** Forgets the row begun (an encoding that failed). */
  drop(): void {
    this.pos = 2;
    this.count = 0;
  }

  private head(height: number, size: number, version: number, hash: Uint8Array, hashAt: number): void {
    if (this.count === MAX_PAGE_NODES) throw new IavlError("CORRUPT", `a page holds at most ${MAX_PAGE_NODES} nodes`);
    if (hash.length < hashAt + HASH) throw new IavlError("CORRUPT", "a page node's hash must be 32 bytes");
    const buf = this.buf;
    buf[this.pos++] = height;
    let pos = putUvarint(buf, this.pos, size);
    pos = putUvarint(buf, pos, version);
    for (let k = 0; k < HASH; k++) buf[pos + k] = hash[hashAt + k]!;
    this.pos = pos + HASH;
  }

  private added(size: number): number {
    this.sizes[this.count] = size;
    return this.count++;
  }

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const grown = new Uint8Array(Math.max(this.buf.length * 2, this.pos + n));
    grown.set(this.buf.subarray(0, this.pos));
    this.buf = grown;
  }
}

/** Decodes and checks a page row; `where` names it in the error (`CORRUPT`) a malformed row throws. */
export function decodePage(bytes: Uint8Array, where: string): DecodedPage {
  const bad = (why: string): IavlError => new IavlError("CORRUPT", `${where} is malformed: ${why}`);
  const r = new ByteReader(bytes, () => bad("it ends early"));
  if (r.byte() !== FORMAT) throw bad("unknown format");
  const count = r.byte();
  if (count === 0) throw bad("no nodes");
  const p = {
    count,
    bytes,
    height: new Uint8Array(count),
    size: new Float64Array(count),
    version: new Float64Array(count),
    hashAt: new Int32Array(count),
    keyAt: new Int32Array(count).fill(-1),
    keyLen: new Int32Array(count).fill(-1),
    leafId: new Float64Array(count).fill(-1),
    left: new Int16Array(count).fill(-1),
    right: new Int16Array(count).fill(-1),
  };
  let lastKey: Uint8Array | undefined;
  for (let i = 0; i < count; i++) {
    const height = r.byte();
    const size = r.uvarint();
    const version = r.uvarint();
    if (version < 1) throw bad(`node ${i} has version ${version}`);
    p.hashAt[i] = r.pos;
    r.view(HASH);
    p.height[i] = height;
    p.size[i] = size;
    p.version[i] = version;
    if (height === 0) {
      if (size !== 1) throw bad(`leaf ${i} has size ${size}`);
      const len = r.uvarint();
      p.keyAt[i] = r.pos;
      p.keyLen[i] = len;
      const key = r.view(len);
      if (lastKey !== undefined && compareBytes(lastKey, key) >= 0) throw bad(`leaf ${i} is out of key order`);
      lastKey = key;
      p.leafId[i] = r.uvarint();
      continue;
    }
    const left = r.byte();
    const right = r.byte();
    // Post-order: the right subtree ends just before its parent, the left one just before the right one's run.
    if (i === 0 || right !== i - 1 || left !== right - (2 * p.size[right]! - 1)) throw bad(`branch ${i} does not sit over its two subtrees`);
    const hl = p.height[left]!;
    const hr = p.height[right]!;
    if (size !== p.size[left]! + p.size[right]!) throw bad(`branch ${i} has size ${size}, its children ${p.size[left]} and ${p.size[right]}`);
    if (height !== 1 + Math.max(hl, hr) || Math.abs(hl - hr) > 1) throw bad(`branch ${i} has height ${height} over children of heights ${hl} and ${hr}`);
    if (version < p.version[left]! || version < p.version[right]!) throw bad(`branch ${i} is older than a child`);
    p.left[i] = left;
    p.right[i] = right;
  }
  if (!r.done) throw bad("bytes after its last node");
  if (2 * p.size[count - 1]! - 1 !== count) throw bad("its nodes are not one subtree");
  return p;
}
