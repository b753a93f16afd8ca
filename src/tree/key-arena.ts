/**
 * The key bytes of a node table, in one buffer outside the garbage-collected heap. Keys as strings cost 72 bytes each
 * for a 56-byte key, and the strings of pages loaded and evicted stayed on the heap as garbage until a full
 * collection: at 10M keys they were ~180 MiB live and swung the heap by ~200 MiB more (ARCHITECTURE.md, "The tree in
 * memory"). Here a key costs its bytes, and the room of a freed key is reused by the next key of the same length.
 * @module
 */
import { grownTo, slab } from "./slab.js";

/** The most bytes the arena holds: offsets are 32-bit. */
const MAX_BYTES = 2 ** 32;

/** Rooms for keys, allocated and freed by length. */
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

  /** Room for `len` bytes: its offset in {@link bytes}. */
  alloc(len: number): number {
    if (len === 0) return 0;
    const free = this.freed.get(len);
    if (free !== undefined && free.length > 0) return free.pop()!;
    const at = this.top;
    if (at + len > this.buf.byteLength) this.grow(at + len);
    this.top = at + len;
    return at;
  }

  /** Gives back the room of `len` bytes at `at`. */
  release(at: number, len: number): void {
    if (len === 0) return;
    const free = this.freed.get(len);
    if (free === undefined) this.freed.set(len, [at]);
    else free.push(at);
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
