/**
 * The owner's side of the WAL checkpointer thread (wal-thread.ts): it wakes the thread after each commit, and stops
 * it on close, waiting until its connection is closed.
 * @module
 */
import { FIRST_SLOT, ThreadChannel } from "../../base/thread-channel.js";

/** Slots of the channel to the thread: commits so far (a writer thread bumps it too), … */
export const COMMITS = FIRST_SLOT;
/** … and the frames the last WAL checkpoint left in the WAL. */
export const WAL_FRAMES = FIRST_SLOT + 1;
const SLOTS = FIRST_SLOT + 2;

/** What the owner passes to the thread. */
export interface WalThreadData {
  file: string;
  busyTimeoutMs: number;
}

/** Keeps one store's WAL checkpointed from a thread of its own. */
export class WalCheckpointer {
  private readonly ch: ThreadChannel;

  constructor(file: string, busyTimeoutMs: number) {
    // A failed checkpointer costs only WAL size, which the writers' own bound still caps: no failure to report.
    this.ch = ThreadChannel.start<WalThreadData>(import.meta.url, "wal-thread", SLOTS, { file, busyTimeoutMs });
  }

  /** The slots a writer thread bumps {@link COMMITS} in. */
  get shared(): SharedArrayBuffer {
    return this.ch.slots.buffer;
  }

  /** The frames the thread's last pass left in the WAL. */
  get framesLeft(): number {
    return this.ch.slots.get(WAL_FRAMES);
  }

  /** After a commit: wakes the thread. */
  committed(): void {
    this.ch.slots.add(COMMITS);
  }

  /** Stops the thread; returns once its connection is closed. */
  close(): void {
    this.ch.close(COMMITS);
  }
}
