/**
 * Turns at a store's one SQLite write lock between its owner's commits and a background writer (the prune thread),
 * through one shared counter. SQLite's busy handler only polls: a thread running short transactions back to back
 * wins nearly every poll, and a commit waited out whole prunes (10 s and more at 1M keys, ARCHITECTURE.md). So the owner
 * counts itself in before it asks for the lock, and the background writer, before each of its transactions, waits
 * until no owner write is waiting or running. A commit then waits for one background transaction at most.
 *
 * The same buffer carries the newest automatic prune target asked of the prune thread, which the owner's writer
 * thread marks in its own turn (see {@link WriteTurn.askMark}).
 * @module
 */

/** The counter of owner writes waiting or running, shared between threads. */
export class WriteTurn {
  private readonly count: Int32Array;
  private readonly mark: BigInt64Array;

  /** A new counter, or a view of one made elsewhere (its {@link buffer}, passed to a thread). */
  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(16)) {
    this.count = new Int32Array(buffer, 0, 1);
    this.mark = new BigInt64Array(buffer, 8, 1);
  }

  /**
   * The owner asked the prune thread for an automatic prune to `target`: its writer thread may mark it (delete the
   * version rows, record the base) right after landing a version, in the same turn. Under a steady churn the
   * writer's transactions follow each other with hardly a gap, and the prune thread, which marks only between its
   * own transactions, each waiting for a turn, let 121 versions be kept for keepRecent 100.
   */
  askMark(target: number): void {
    if (target > this.markAsked()) Atomics.store(this.mark, 0, BigInt(target));
  }

  /** The newest target {@link askMark} was given (0: none). */
  markAsked(): number {
    return Number(Atomics.load(this.mark, 0));
  }

  /** Runs `write`, an owner's write, with background writers held back from starting theirs meanwhile. */
  owner<T>(write: () => T): T {
    this.enter();
    try {
      return write();
    } finally {
      this.leave();
    }
  }

  /** Holds background writers back until {@link leave}: an owner's writes that span several calls (a group of commits). */
  enter(): void {
    Atomics.add(this.count, 0, 1);
  }

  /** Ends what {@link enter} began. */
  leave(): void {
    if (Atomics.sub(this.count, 0, 1) === 1) Atomics.notify(this.count, 0);
  }

  /**
   * Before a background transaction: returns once no owner write is waiting or running, or after `maxWaitMs`, so
   * that an owner that writes without pause cannot hold the background writer off for ever.
   */
  yieldToOwner(maxWaitMs: number): void {
    const until = Date.now() + maxWaitMs;
    for (let n = Atomics.load(this.count, 0); n !== 0; n = Atomics.load(this.count, 0)) {
      const left = until - Date.now();
      if (left <= 0) return;
      Atomics.wait(this.count, 0, n, left);
    }
  }
}
