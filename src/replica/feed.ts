/**
 * The owner's end of the feed thread (feed-thread.ts): the versions it reads, decoded, one at a time, each counted
 * as consumed so that the thread reads on; the thread's failure thrown as the `IavlError` it named.
 * @module
 */
import { IavlError, type ErrorCode } from "../base/errors.js";
import { FIRST_SLOT, STOP, ThreadChannel } from "../base/thread-channel.js";
import { decodeFeedVersion, type FeedVersion } from "../sync/ops-wire.js";

/** What the owner gives the thread. */
export interface FeedThreadData {
  url: string;
  names: string[];
  from: number;
  batch: number;
  waitMs: number;
}

/** A message of the thread: a version's frames, or the failure that ended it. */
export type FeedMessage = { frames: Uint8Array[] } | { error: { code: string; message: string } };

/** Slot: the bytes of the versions the owner has consumed. */
export const CONSUMED = FIRST_SLOT;
/** Slots a feed channel needs. */
export const FEED_SLOTS = FIRST_SLOT + 1;
/**
 * Bytes read ahead of the owner, at most (and one version more): on the mixed profile ~9 versions, enough that the
 * thread never waits on the owner while the service streams (4 versions ahead left the owner idle 40 % of the time).
 */
export const AHEAD_BYTES = 64 << 20;

/** The versions of every store of a source from a version on, read ahead by a thread. */
export class Feed {
  private readonly channel: ReturnType<typeof ThreadChannel.start>;
  private readonly inbox: FeedMessage[] = [];
  private wake: (() => void) | undefined;
  private failure: Error | undefined;

  constructor(
    private readonly d: FeedThreadData,
    signal: AbortSignal,
  ) {
    signal.addEventListener("abort", () => this.fail(new IavlError("SOURCE_UNAVAILABLE", "the replica is stopping")), { once: true });
    this.channel = ThreadChannel.start(import.meta.url, "feed-thread", FEED_SLOTS, d, [], (e) => this.fail(e));
    this.channel.worker.on("message", (m: FeedMessage) => {
      this.inbox.push(m);
      this.wake?.();
    });
    this.channel.worker.on("exit", () => this.fail(new IavlError("SOURCE_UNAVAILABLE", "the feed's thread ended")));
    this.channel.worker.ref();
  }

  /** The next version's frames, by store name (in the order the feed was opened with). */
  async next(): Promise<Map<string, FeedVersion>> {
    for (;;) {
      const m = this.inbox.shift();
      if (m !== undefined) {
        if ("error" in m) throw new IavlError(m.error.code as ErrorCode, m.error.message);
        this.channel.slots.add(CONSUMED, m.frames.reduce((n, f) => n + f.length, 0));
        return new Map(this.d.names.map((n, i) => [n, decodeFeedVersion(m.frames[i]!)]));
      }
      if (this.failure !== undefined) throw this.failure;
      await new Promise<void>((r) => (this.wake = r));
      this.wake = undefined;
    }
  }

  /** Stops the thread; what it read ahead is dropped. */
  async close(): Promise<void> {
    this.channel.slots.set(STOP, 1);
    await this.channel.worker.terminate();
  }

  private fail(e: Error): void {
    this.failure ??= e;
    this.wake?.();
  }
}
