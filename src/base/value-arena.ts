/**
 * Copies of values into chunks of memory that are reused version after version: one allocation per chunk instead of
 * one per value, and after the first versions none at all: an array per value costs an allocation, its zeroing and
 * its finalization, and fresh chunks count as external memory, which V8 answers with full collections (see
 * ARCHITECTURE.md, "Measurements behind the design").
 *
 * The owner says when the values of a version are no longer read ({@link ValueArena.release}); a chunk is only
 * reused after that, so a view handed out stays valid until then, and must not be kept past it: this suits a store,
 * which drops each leaf's value once the version is written, not a tree that keeps its values as long as the key lives.
 * @module
 */

const CHUNK = 1 << 20;
/** Values larger than this get an array of their own: they would waste too much of a chunk's tail. */
const LARGEST = CHUNK >> 4;
/** Chunks kept for reuse at most; more are left to the garbage collector (a version far larger than the usual). */
const POOL = 32;

const NONE: Uint8Array = new Uint8Array(0);

/** Hands out copies of values, packed into chunks that are reused once their versions are released. */
export class ValueArena {
  private chunk: Uint8Array = NONE;
  private used = 0;
  /** Chunks holding values copied since the last seal (the working version's). */
  private open: Uint8Array[] = [];
  /** Chunks of sealed versions, oldest first. */
  private readonly sealed: Array<{ version: number; chunks: Uint8Array[] }> = [];
  private readonly free: Uint8Array[] = [];

  /** A copy of `value`, which may share its buffer with other copies; valid until its version is released. */
  copy(value: Uint8Array): Uint8Array {
    const n = value.length;
    if (n > LARGEST) return new Uint8Array(value);
    if (this.used + n > this.chunk.length) {
      this.chunk = this.free.pop() ?? new Uint8Array(CHUNK);
      this.open.push(this.chunk);
      this.used = 0;
    }
    const at = this.used;
    this.chunk.set(value, at);
    this.used = at + n;
    return new Uint8Array(this.chunk.buffer, at, n);
  }

  /** Every copy made so far belongs to `version`, being committed: its chunks wait for {@link release} of it. */
  seal(version: number): void {
    if (this.open.length === 0) return;
    this.sealed.push({ version, chunks: this.open });
    this.open = [];
    this.chunk = NONE;
    this.used = 0;
  }

  /** Nothing reads the copies of versions ≤ `version` any more: their chunks are reused. */
  release(version: number): void {
    while (this.sealed.length > 0 && this.sealed[0]!.version <= version) {
      for (const c of this.sealed.shift()!.chunks) if (this.free.length < POOL) this.free.push(c);
    }
  }
}
