/**
 * Copies of values into shared chunks of memory: one allocation per chunk instead of one per value. An array of its
 * own per value costs an allocation, its zeroing and later its finalization by the garbage collector, several times
 * the copy itself; a view into a chunk is one small heap object.
 *
 * A chunk lives as long as any value in it, so this suits values that are dropped soon after (a store drops each
 * leaf's value once the version is written), not a tree that keeps its values for as long as the key lives.
 * @module
 */

const CHUNK = 1 << 20;
/** Values larger than this get an array of their own: they would waste too much of a chunk's tail. */
const LARGEST = CHUNK >> 4;

/** Hands out copies of values, packed into chunks. */
export class ValueArena {
  private chunk = new Uint8Array(0);
  private used = 0;

  /** A copy of `value`, which may share its buffer with other copies. */
  copy(value: Uint8Array): Uint8Array {
    const n = value.length;
    if (n > LARGEST) return new Uint8Array(value);
    if (this.used + n > this.chunk.length) {
      this.chunk = new Uint8Array(CHUNK);
      this.used = 0;
    }
    const at = this.used;
    this.chunk.set(value, at);
    this.used = at + n;
    return new Uint8Array(this.chunk.buffer, at, n);
  }
}
