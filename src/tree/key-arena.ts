/**
 * The key bytes of a node table, in one buffer outside the garbage-collected heap. Keys as strings cost 72 bytes each
 * for a 56-byte key, and the strings of pages loaded and evicted stayed on the heap as garbage until a full
 * collection: at 10M keys they were ~180 MiB live and swung the heap by ~200 MiB more (ARCHITECTURE.md, "The tree in
 * memory"). Here a key costs its bytes and a count of its holders: a path copy of a branch holding its key shares
 * the room instead of copying the bytes (the copies cost 3.2 s of a 1M-key churn's 81), and the room of a key no
 * node holds any more goes to the next key of the same length.
 * @module
 */
import { grownTo, slab } from "./slab.js";

/** The most bytes the arena holds: offsets are 32-bit. */
const MAX_BYTES = 2 ** 32;
/** Bytes before a room's key: the count of nodes holding it, 32-bit little-endian. */
const COUNT = 4;

/** Rooms for keys, allocated by length, shared by count and freed when the last holder lets go. */
export class KeyArena {
  private buf: ArrayBuffer;
  /** The arena's bytes. A key's room is valid until it is freed; the view is replaced when the arena grows by a copy. */
  bytes: Uint8Array;
  /** Bytes handed out at least once. */
  private top = 0;
  /** Freed rooms by length: keys of one store come in few lengths, so exact lengths waste nothing and need no merging. */
  private readonly freed = new Map<number, number[]>();

  constructor(fixed = false) {
    this.buf = slab(4096, fixed ? 0 : MAX_BYTES);
    this.bytes = new Uint8Array(this.buf);
  }

  /** Room for `len` bytes, held once: its offset in {@link bytes}. */
  alloc(len: number): number {
    if (len === 0) return 0;
    const free = this.freed.get(len);
    let at: number;
    if (free !== undefined && free.length > 0) at = free.pop()!;
    else {
      at = this.top + COUNT;
      if (at + len > this.buf.byteLength) this.grow(at + len);
      this.top = at + len;
    }
    this.setCount(at, 1);
    return at;
  }

  /** One more holder of the room of `len` bytes at `at`: its bytes never change, so holders can share them. */
  share(at: number, len: number): void {
    if (len !== 0) this.setCount(at, this.count(at) + 1);
  }

  /** One holder fewer of the room of `len` bytes at `at`; the last one gives it back. */
  release(at: number, len: number): void {
    if (len === 0) return;
    const c = this.count(at) - 1;
    this.setCount(at, c);
    if (c > 0) return;
    const free = this.freed.get(len);
    if (free === undefined) this.freed.set(len, [at]);
    else free.push(at);
  }

  /** Holders of the room at `at`. */
  count(at: number): number {
    const b = this.bytes;
    return (b[at - 4]! | (b[at - 3]! << 8) | (b[at - 2]! << 16) | (b[at - 1]! << 24)) >>> 0;
  }

  private setCount(at: number, c: number): void {
    const b = this.bytes;
    b[at - 4] = c;
    b[at - 3] = c >>> 8;
    b[at - 2] = c >>> 16;
    b[at - 1] = c >>> 24;
  }

  /** Bytes in rooms handed out (freed or not): what the arena has backed. */
  get extent(): number {
    return this.top;
  }

  private grow(need: number): void {
    if (need > MAX_BYTES) throw new RangeError(`a node table holds at most ${MAX_BYTES} bytes of keys`);
    const bytes = Math.min(Math.max(need, Math.ceil(this.buf.byteLength * 1.5)), MAX_BYTES);
    const buf = grownTo(this.buf, bytes);
    if (buf !== this.buf) [this.buf, this.bytes] = [buf, new Uint8Array(buf)];
  }
}
