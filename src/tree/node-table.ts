/**
 * The nodes of a tree held in one slab: a node is an integer id, its fields a 64-byte record in one ArrayBuffer, its
 * key's bytes in a {@link KeyArena} beside it. A tree of a million keys is then a few large objects the garbage
 * collector never traces, instead of millions of small ones it traces every collection; nodes are freed explicitly,
 * by whoever knows that no version still holds them (see ARCHITECTURE.md, "The tree in memory").
 * @module
 */
import { innerHashOf, leafHash, type Digest } from "../base/hash.js";
import { latin1Of, putLatin1, type ByteString } from "../base/bytes.js";
import { KeyArena } from "./key-arena.js";
import { grownTo, slab } from "./slab.js";

/** No node: the id of an empty tree, or of a child known only by its node key. */
export const NONE = 0;

// A record is one cache line, the fields a walk down the tree, a path copy and a hash read and write:
//   f[0] version   f[1] size   i[4] left   i[5] right   i[6] key prefix << 8 | height << 1 | hashed   i[7] key owner
//   bytes 32..63 the hash
// A store's nodes have a second record of links in `links` (5 float64): seq, leftVersion, leftSeq, rightVersion,
// rightSeq, read only at loads, checkpoints and eviction; and two int32 in `stubIds`: the stubs of children known only
// by node key (see `leftStub`). A node that owns its key has its room in the key arena in `keyRefs`: offset, length.
const F = 8; // float64 slots a record
const I = 16; // int32 slots a record
const B = 64; // bytes a record
const HASH = 32; // the hash's byte offset in a record
const L = 5; // float64 slots of links
const HASHED = 1;
const LITTLE_ENDIAN = new Uint8Array(Uint32Array.of(1).buffer)[0] === 1;
/** The most nodes a table holds: 4 GiB of records, reserved as address space and backed only as the table grows. */
const MAX_NODES = 2 ** 26;

/** The height a freed node has: only a tree of more than 10^26 keys reaches it, so a use after free shows. */
const FREED = 127;

/**
 * The first three bytes of a key as a number (zero-padded), which orders as the key does wherever two prefixes
 * differ: a walk down the tree compares these and reads the key's string only on a tie.
 */
export function keyPrefix(k: ByteString): number {
  const n = k.length;
  return ((n > 0 ? k.charCodeAt(0) : 0) << 16) | ((n > 1 ? k.charCodeAt(1) : 0) << 8) | (n > 2 ? k.charCodeAt(2) : 0);
}

/** {@link keyPrefix} of bytes `start` … `end` − 1 of `b`. */
function keyPrefixOf(b: Uint8Array, start: number, end: number): number {
  const n = end - start;
  return ((n > 0 ? b[start]! : 0) << 16) | ((n > 1 ? b[start + 1]! : 0) << 8) | (n > 2 ? b[start + 2]! : 0);
}

/** What a table needs beyond the tree's shape. */
export interface NodeTableOptions {
  /** Keep node keys (version, sequence) of nodes and their children: the nodes come from or go to a store. */
  stored?: boolean;
  /** Nodes to make room for at first. */
  capacity?: number;
  /** Grow by a copy, as where the runtime cannot reserve address space for a resizable buffer (for tests). */
  fixed?: boolean;
}

/** A slab of tree nodes. Ids start at 1; {@link NONE} is no node. */
export class NodeTable {
  private buf: ArrayBuffer;
  private linkBuf: ArrayBuffer;
  private f: Float64Array;
  private i: Int32Array;
  private u8: Uint8Array;
  private links: Float64Array;
  private stubBuf: ArrayBuffer;
  private stubIds: Int32Array;
  private readonly stored: boolean;
  /**
   * Key bytes of the nodes that own a key: every leaf, and the branches that got a key of their own (loaded from a
   * row, or given a new leftmost key by a removal). Other branches name the leaf whose key they carry (field `key
   * owner`), which sits in their right subtree and so lives at least as long as they do; a path copy then copies a
   * number, not the key.
   */
  private readonly arena: KeyArena;
  private keyBuf: ArrayBuffer;
  private keyRefs: Uint32Array;
  /** The value of each leaf that holds one (a leaf of a version not yet written). */
  private readonly values = new Map<number, Uint8Array>();
  private cap: number;
  /** The next id never handed out. */
  private next = 1;
  /** Freed ids, a stack. */
  private free: Int32Array;
  private freeCount = 0;
  /** Walks that must not see a node freed under them; while any is open, frees wait in `deferred`. */
  private pins = 0;
  private deferred: number[] = [];

  constructor(options: NodeTableOptions = {}) {
    this.cap = Math.max(16, options.capacity ?? 1024);
    this.stored = options.stored === true;
    const fixed = options.fixed === true;
    this.buf = slab(this.cap * B, fixed ? 0 : MAX_NODES * B);
    this.f = new Float64Array(this.buf);
    this.i = new Int32Array(this.buf);
    this.u8 = new Uint8Array(this.buf);
    this.linkBuf = slab(this.stored ? this.cap * L * 8 : 0, this.stored && !fixed ? MAX_NODES * L * 8 : 0);
    this.links = new Float64Array(this.linkBuf);
    this.stubBuf = slab(this.stored ? this.cap * 8 : 0, this.stored && !fixed ? MAX_NODES * 8 : 0);
    this.stubIds = new Int32Array(this.stubBuf);
    this.keyBuf = slab(this.cap * 8, fixed ? 0 : MAX_NODES * 8);
    this.keyRefs = new Uint32Array(this.keyBuf);
    this.arena = new KeyArena(fixed);
    this.free = new Int32Array(256);
  }

  /** Nodes allocated and not freed (freed-but-deferred ones count until they are freed). */
  get live(): number {
    return this.next - 1 - this.freeCount;
  }

  // ---- fields ----------------------------------------------------------------------------------------------------

  version(n: number): number {
    return this.f[n * F]!;
  }
  size(n: number): number {
    return this.f[n * F + 1]!;
  }
  height(n: number): number {
    return (this.i[n * I + 6]! >> 1) & 0x7f;
  }
  /** The {@link keyPrefix} of the node's key. */
  prefix(n: number): number {
    return this.i[n * I + 6]! >>> 8;
  }
  /** The node's key as a string (made at each call: comparisons go through {@link compareKey}). */
  key(n: number): ByteString {
    const o = this.i[n * I + 7]!;
    const at = this.keyRefs[2 * o]!;
    return latin1Of(this.arena.bytes, at, at + this.keyRefs[2 * o + 1]!);
  }
  /** The node's key in an array of its own. */
  keyBytes(n: number): Uint8Array {
    const o = this.i[n * I + 7]!;
    const at = this.keyRefs[2 * o]!;
    return this.arena.bytes.slice(at, at + this.keyRefs[2 * o + 1]!);
  }
  /** The array every key sits in, at {@link keyAt}: valid until the table next makes a node or gives one a key. */
  keyArea(): Uint8Array {
    return this.arena.bytes;
  }
  /** Where node `n`'s key starts in {@link keyArea}. */
  keyAt(n: number): number {
    return this.keyRefs[2 * this.i[n * I + 7]!]!;
  }
  keyLength(n: number): number {
    return this.keyRefs[2 * this.i[n * I + 7]! + 1]!;
  }
  /** Byte order of `key` against node `n`'s key: negative, 0 or positive. */
  compareKey(key: ByteString, n: number): number {
    const o = this.i[n * I + 7]!;
    const at = this.keyRefs[2 * o]!;
    const len = this.keyRefs[2 * o + 1]!;
    const b = this.arena.bytes;
    const m = Math.min(key.length, len);
    for (let k = 0; k < m; k++) {
      const d = key.charCodeAt(k) - b[at + k]!;
      if (d !== 0) return d;
    }
    return key.length - len;
  }
  /** Gives a branch a key of its own (a new leftmost key of its right subtree, after a removal). */
  setKey(n: number, key: ByteString): void {
    if (this.i[n * I + 7] === n) this.dropKey(n);
    this.i[n * I + 7] = n;
    this.putKey(n, key);
    this.i[n * I + 6] = (keyPrefix(key) << 8) | (this.i[n * I + 6]! & 0xff);
  }
  /** A branch whose key is the key of leaf `from` takes it from leaf `to` (same key) instead: `from` is going. */
  moveKey(n: number, from: number, to: number): void {
    if (this.i[n * I + 7] === from) this.i[n * I + 7] = to;
  }
  /** Sets a branch's height and size. */
  measure(n: number, height: number, size: number): void {
    this.i[n * I + 6] = (this.i[n * I + 6]! & ~0xfe) | (height << 1);
    this.f[n * F + 1] = size;
  }
  /** The left child in memory, or {@link NONE} when it is known only by its node key. */
  left(n: number): number {
    return this.i[n * I + 4]!;
  }
  right(n: number): number {
    return this.i[n * I + 5]!;
  }
  /** Links a child in memory (its node key is then the child's own). */
  setLeft(n: number, c: number): void {
    this.i[n * I + 4] = c;
    if (this.stored && this.stubIds[2 * n] !== NONE) this.dropStub(n, 0);
  }
  setRight(n: number, c: number): void {
    this.i[n * I + 5] = c;
    if (this.stored && this.stubIds[2 * n + 1] !== NONE) this.dropStub(n, 1);
  }
  value(n: number): Uint8Array | undefined {
    return this.values.get(n);
  }
  setValue(n: number, v: Uint8Array | undefined): void {
    if (v === undefined) this.values.delete(n);
    else this.values.set(n, v);
  }

  // ---- node keys (stored tables only) ------------------------------------------------------------------------------

  /** The stored sequence of the node's node key in its in-memory form (sqlite/node-rows.ts); 0 when unstored. */
  seq(n: number): number {
    return this.links[n * L]!;
  }
  setSeq(n: number, seq: number): void {
    this.links[n * L] = seq;
  }
  /** The node key of a child known only by it (`seq` 0: none); stale while that child is in memory. */
  leftVersion(n: number): number {
    return this.links[n * L + 1]!;
  }
  leftSeq(n: number): number {
    return this.links[n * L + 2]!;
  }
  rightVersion(n: number): number {
    return this.links[n * L + 3]!;
  }
  rightSeq(n: number): number {
    return this.links[n * L + 4]!;
  }
  /** Names a child by node key, with nothing in memory: it is loaded (or not) on demand. */
  linkLeft(n: number, version: number, seq: number): void {
    this.i[n * I + 4] = NONE;
    this.links[n * L + 1] = version;
    this.links[n * L + 2] = seq;
    this.dropStub(n, 0);
  }
  linkRight(n: number, version: number, seq: number): void {
    this.i[n * I + 5] = NONE;
    this.links[n * L + 3] = version;
    this.links[n * L + 4] = seq;
    this.dropStub(n, 1);
  }

  // ---- stubs (stored tables only) --------------------------------------------------------------------------------
  //
  // A stub stands for a child known only by its node key: a record with the child's version, size, height and hash
  // and no key or children, owned by the parent and reachable only through leftStub/rightStub, never as anyone's
  // child, so no walk of the tree can take it for a node. A parent loaded from a row that carries its children's
  // hashes, heights and sizes gets one per side: a rehash, a size or a balance factor then reads no sibling.

  /** The stub of the left child when that child is known only by node key, or {@link NONE}. */
  leftStub(n: number): number {
    return this.stored ? this.stubIds[2 * n]! : NONE;
  }
  rightStub(n: number): number {
    return this.stored ? this.stubIds[2 * n + 1]! : NONE;
  }
  /**
   * The record of `n`'s child on one side for its version, height, size and hash: the child in memory, else its stub,
   * else {@link NONE} (the child must be loaded). Its key and children are not to be read: a stub has none.
   */
  childRecord(n: number, left: boolean): number {
    const c = left ? this.left(n) : this.right(n);
    if (c !== NONE) return c;
    return left ? this.leftStub(n) : this.rightStub(n);
  }
  /** Gives `n` a stub for its child on one side (known by node key): that child's version, height, size and hash. */
  stub(n: number, left: boolean, version: number, height: number, size: number, hash: Uint8Array, at: number): void {
    const side = left ? 0 : 1;
    this.dropStub(n, side);
    const s = this.newStub(version, height, size, hash, at);
    this.stubIds[2 * n + side] = s;
  }
  private newStub(version: number, height: number, size: number, hash: Uint8Array, at: number): number {
    const s = this.alloc();
    this.init(s, NONE, 0, version, height, size);
    // `hash` may be this table's area from before a growth by a copy: it still holds the same bytes.
    this.setHashFrom(s, hash, at);
    return s;
  }
  /** Takes `n`'s stub on one side away from it (the caller retires it): its child is being loaded. */
  takeStub(n: number, left: boolean): number {
    if (!this.stored) return NONE;
    const k = 2 * n + (left ? 0 : 1);
    const s = this.stubIds[k]!;
    this.stubIds[k] = NONE;
    return s;
  }
  private dropStub(n: number, side: number): void {
    if (!this.stored) return;
    const s = this.stubIds[2 * n + side]!;
    if (s === NONE) return;
    this.stubIds[2 * n + side] = NONE;
    this.retire(s);
  }

  // ---- hashes ----------------------------------------------------------------------------------------------------

  hashed(n: number): boolean {
    return (this.i[n * I + 6]! & HASHED) !== 0;
  }
  /** Forgets the hash of a node of the working version that is about to change. */
  unhash(n: number): void {
    this.i[n * I + 6] = this.i[n * I + 6]! & ~HASHED;
  }
  /** Stores `d` as the node's hash. */
  setHash(n: number, d: Digest): void {
    const i = this.i;
    const o = n * I + HASH / 4;
    if (!LITTLE_ENDIAN) {
      for (let k = 0; k < 32; k++) this.u8[n * B + HASH + k] = d.charCodeAt(k);
      i[n * I + 6] = i[n * I + 6]! | HASHED;
      return;
    }
    // Four chars to a word, as the byte view reads them back on a little-endian machine: 8 stores, not 32.
    for (let k = 0; k < 8; k++) {
      const c = 4 * k;
      i[o + k] = d.charCodeAt(c) | (d.charCodeAt(c + 1) << 8) | (d.charCodeAt(c + 2) << 16) | (d.charCodeAt(c + 3) << 24);
    }
    i[n * I + 6] = i[n * I + 6]! | HASHED;
  }
  /** Stores a hash given as bytes (a row's). */
  setHashBytes(n: number, h: Uint8Array): void {
    this.u8.set(h.length === 32 ? h : h.subarray(0, 32), n * B + HASH);
    this.i[n * I + 6] = this.i[n * I + 6]! | HASHED;
  }
  /** Computes and stores a leaf's hash from its value's hash. */
  hashLeaf(n: number, valueHash: Digest): void {
    this.setHash(n, leafHash(this.key(n), valueHash, this.f[n * F]!));
  }
  /** Computes and stores a branch's hash from its hashed children `l` and `r`. */
  hashInner(n: number, l: number, r: number): void {
    this.setHash(n, innerHashOf(this.height(n), this.f[n * F + 1]!, this.f[n * F]!, this.u8, l * B + HASH, r * B + HASH));
  }
  /** The hash as a digest (a string: for comparisons and the few places that keep one). */
  digest(n: number): Digest {
    return String.fromCharCode.apply(null, this.u8.subarray(n * B + HASH, n * B + HASH + 32) as unknown as number[]);
  }
  /**
   * The array every node's hash sits in, at {@link hashAt}: for copying hashes into a row without an array each. Valid
   * until the table next grows.
   */
  hashArea(): Uint8Array {
    return this.u8;
  }
  /** Where node `n`'s hash starts in {@link hashArea}. */
  hashAt(n: number): number {
    return n * B + HASH;
  }
  /** Stores the 32 bytes of `from` at `at` as the node's hash (a page row's, without a view of it). */
  setHashFrom(n: number, from: Uint8Array, at: number): void {
    const u8 = this.u8;
    const o = n * B + HASH;
    for (let k = 0; k < 32; k++) u8[o + k] = from[at + k]!;
    this.i[n * I + 6] = this.i[n * I + 6]! | HASHED;
  }
  /** True when nodes `a` and `b` hold the same hash. */
  sameHash(a: number, b: number): boolean {
    const u8 = this.u8;
    for (let k = 0; k < 32; k++) if (u8[a * B + HASH + k] !== u8[b * B + HASH + k]) return false;
    return true;
  }
  /** The hash in an array of its own. */
  hashBytes(n: number): Uint8Array {
    return this.u8.slice(n * B + HASH, n * B + HASH + 32);
  }

  // ---- making and freeing ----------------------------------------------------------------------------------------

  private alloc(): number {
    if (this.freeCount > 0) return this.free[--this.freeCount]!;
    if (this.next === this.cap) this.grow();
    return this.next++;
  }

  private grow(): void {
    const cap = Math.min(Math.ceil(this.cap * 1.5), MAX_NODES);
    if (cap === this.cap) throw new RangeError(`a node table holds at most ${MAX_NODES} nodes`);
    // In place where the buffers are resizable (the arrays over them follow their length); by half, not double,
    // where they are copied: a slab of millions of nodes is hundreds of MiB, copied once per growth.
    const buf = grownTo(this.buf, cap * B);
    if (buf !== this.buf) [this.buf, this.f, this.i, this.u8] = [buf, new Float64Array(buf), new Int32Array(buf), new Uint8Array(buf)];
    if (this.stored) {
      const links = grownTo(this.linkBuf, cap * L * 8);
      if (links !== this.linkBuf) [this.linkBuf, this.links] = [links, new Float64Array(links)];
      const stubs = grownTo(this.stubBuf, cap * 8);
      if (stubs !== this.stubBuf) [this.stubBuf, this.stubIds] = [stubs, new Int32Array(stubs)];
    }
    const keyRefs = grownTo(this.keyBuf, cap * 8);
    if (keyRefs !== this.keyBuf) [this.keyBuf, this.keyRefs] = [keyRefs, new Uint32Array(keyRefs)];
    this.cap = cap;
  }

  private init(n: number, keyOwner: number, kp: number, version: number, height: number, size: number): void {
    const b = n * F;
    this.f[b] = version;
    this.f[b + 1] = size;
    this.f[b + 2] = 0; // left, right
    const i = n * I;
    this.i[i + 6] = (kp << 8) | (height << 1);
    this.i[i + 7] = keyOwner;
    if (this.stored) {
      this.links[n * L] = 0;
      this.stubIds[2 * n] = NONE;
      this.stubIds[2 * n + 1] = NONE;
    }
  }

  /** A new leaf. */
  leaf(key: ByteString, value: Uint8Array | undefined, version: number): number {
    const n = this.alloc();
    this.init(n, n, keyPrefix(key), version, 0, 1);
    this.putKey(n, key);
    if (value !== undefined) this.values.set(n, value);
    return n;
  }

  /** A new leaf, with no value, whose key is bytes `start` … `end` − 1 of `from` (a stored row's). */
  storedLeaf(from: Uint8Array, start: number, end: number, version: number): number {
    const n = this.alloc();
    this.init(n, n, keyPrefixOf(from, start, end), version, 0, 1);
    this.putKeyBytes(n, from, start, end);
    return n;
  }

  /** A new branch, with no children yet, whose key is node `named`'s (a leaf's, as the mutator makes them). */
  branch(named: number, version: number, height: number, size: number): number {
    const n = this.alloc();
    this.init(n, this.i[named * I + 7]!, this.prefix(named), version, height, size);
    return n;
  }

  /** A new branch, with no children yet, with a key of its own (one loaded from storage). */
  keyedBranch(key: Uint8Array, version: number, height: number, size: number): number {
    const n = this.alloc();
    this.init(n, n, keyPrefixOf(key, 0, key.length), version, height, size);
    this.putKeyBytes(n, key, 0, key.length);
    return n;
  }

  private putKey(n: number, key: ByteString): void {
    const at = this.arena.alloc(key.length);
    putLatin1(this.arena.bytes, at, key);
    this.keyRefs[2 * n] = at;
    this.keyRefs[2 * n + 1] = key.length;
  }
  private putKeyBytes(n: number, from: Uint8Array, start: number, end: number): void {
    const at = this.arena.alloc(end - start);
    this.arena.bytes.set(from.subarray(start, end), at);
    this.keyRefs[2 * n] = at;
    this.keyRefs[2 * n + 1] = end - start;
  }
  /** Makes node `n` a holder of node `from`'s room (its key's bytes never change, so the two share them). */
  private shareKey(n: number, from: number): void {
    const at = this.keyRefs[2 * from]!;
    const len = this.keyRefs[2 * from + 1]!;
    this.arena.share(at, len);
    this.keyRefs[2 * n] = at;
    this.keyRefs[2 * n + 1] = len;
  }
  private dropKey(n: number): void {
    this.arena.release(this.keyRefs[2 * n]!, this.keyRefs[2 * n + 1]!);
  }

  /** A working copy of branch `n` at `version`: same key, shape and children, unhashed and unstored. */
  copy(n: number, version: number): number {
    const c = this.alloc();
    const f = this.f;
    const from = n * F;
    const to = c * F;
    f[to] = version;
    f[to + 1] = f[from + 1]!;
    f[to + 2] = f[from + 2]!; // left, right
    const i = this.i;
    i[c * I + 6] = i[n * I + 6]! & ~HASHED;
    const owner = i[n * I + 7]!;
    if (owner === n) {
      // A key of the original's own goes when the original does: the copy holds the room too.
      this.shareKey(c, n);
      i[c * I + 7] = c;
    } else i[c * I + 7] = owner;
    if (this.stored) {
      const l = this.links;
      for (let k = 0; k < L; k++) l[c * L + k] = l[n * L + k]!;
      l[c * L] = 0;
      // Each parent owns its stubs: the copy gets its own of each (made before storing them: a growth replaces arrays).
      const a = this.cloneStub(this.stubIds[2 * n]!);
      const b = this.cloneStub(this.stubIds[2 * n + 1]!);
      this.stubIds[2 * c] = a;
      this.stubIds[2 * c + 1] = b;
    }
    return c;
  }

  private cloneStub(s: number): number {
    return s === NONE ? NONE : this.newStub(this.f[s * F]!, this.height(s), this.f[s * F + 1]!, this.u8, s * B + HASH);
  }

  /** Frees `n` now, or once no walk is open. */
  retire(n: number): void {
    if (this.pins > 0) this.deferred.push(n);
    else this.release(n);
  }

  /** Frees every in-memory node of the subtree under `n` (the caller knows that nothing else holds them). */
  retireTree(n: number): void {
    const stack = [n];
    while (stack.length > 0) {
      const m = stack.pop()!;
      if (this.height(m) > 0) {
        const l = this.i[m * I + 4]!;
        const r = this.i[m * I + 5]!;
        if (l !== NONE) stack.push(l);
        if (r !== NONE) stack.push(r);
      }
      this.retire(m);
    }
  }

  /**
   * Gives branch `n`, if it names another node's key, a key of its own: before `retireTree` frees nodes that
   * branches staying in memory may name (eviction keeps the top of a tree and frees the rest).
   */
  ownKey(n: number): void {
    const i = this.i;
    const owner = i[n * I + 7]!;
    if (owner !== n) {
      this.shareKey(n, owner);
      i[n * I + 7] = n;
    }
  }

  private release(n: number): void {
    if (this.stored) {
      const a = this.stubIds[2 * n]!;
      const b = this.stubIds[2 * n + 1]!;
      this.stubIds[2 * n] = this.stubIds[2 * n + 1] = NONE;
      if (a !== NONE) this.release(a);
      if (b !== NONE) this.release(b);
    }
    const i = this.i;
    if (i[n * I + 7] === n) this.dropKey(n);
    if (this.height(n) === 0) this.values.delete(n);
    i[n * I + 6] = FREED << 1;
    if (this.freeCount === this.free.length) {
      const grown = new Int32Array(this.free.length * 2);
      grown.set(this.free);
      this.free = grown;
    }
    this.free[this.freeCount++] = n;
  }

  /** True when `n` is freed (or was never handed out): a check for tests. */
  isFree(n: number): boolean {
    return n <= 0 || n >= this.next || this.height(n) === FREED;
  }

  /**
   * Holds back frees until the returned release is called (once; later calls do nothing): a walk that yields between
   * steps pins the table so that the nodes it holds stay whole while the owner goes on committing.
   */
  pin(): () => void {
    this.pins++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      if (--this.pins === 0) {
        const d = this.deferred;
        this.deferred = [];
        for (const n of d) this.release(n);
      }
    };
  }
}

/** Releases the pins of walks that were dropped unfinished, once the garbage collector has taken them. */
const abandoned = new FinalizationRegistry<() => void>((release) => release());

/**
 * Runs `walk` with `table` pinned: the pin is released when the walk ends, is closed (`return()`, a `break` out
 * of `for…of`), or is dropped unfinished and collected.
 */
export function pinnedWalk<T>(table: NodeTable, walk: () => Generator<T>): IterableIterator<T> {
  const release = table.pin();
  const token = {};
  const done = (): void => {
    release();
    abandoned.unregister(token);
  };
  const inner = walk();
  const outer: IterableIterator<T> = {
    next(): IteratorResult<T> {
      try {
        const r = inner.next();
        if (r.done === true) done();
        return r;
      } catch (e) {
        done();
        throw e;
      }
    },
    return(value?: unknown): IteratorResult<T> {
      done();
      return inner.return(value as never);
    },
    [Symbol.iterator](): IterableIterator<T> {
      return outer;
    },
  };
  abandoned.register(outer, release, token);
  return outer;
}
