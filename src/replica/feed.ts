/**
 * The owner's end of the feed thread (feed-thread.ts): the versions it has read, decoded, as many as are there at
 * once (within bounds), each counted as consumed so that the thread reads on; the source's latest version when it has
 * nothing newer; the thread's failure thrown as the `IavlError` it named.
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

/**
 * A message of the thread: a version's frames, the source's latest version when a long poll ended with nothing newer,
 * or the failure that ended the thread.
 */
export type FeedMessage = { frames: Uint8Array[] } | { idle: number } | { error: { code: string; message: string } };

/** What {@link Feed.take} gives: versions (each by store name), or, when there are none, the source's latest version. */
export type Taken = { versions: Array<Map<string, FeedVersion>>; idle?: undefined } | { versions: []; idle: number };

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

  /**
   * The versions read so far, in order, each by store name: waits for the first, then takes those already there up
   * to `maxVersions` and `maxBytes` of frames (one version at least). When a long poll ended with nothing newer
   * instead, the source's latest version as `idle`. A failure of the thread is thrown once the versions read before
   * it were taken.
   */
  async take(maxBytes: number, maxVersions: number): Promise<Taken> {
    for (;;) {
      if (this.inbox.length > 0) return this.takeReady(maxBytes, maxVersions);
      if (this.failure !== undefined) throw this.failure;
      await new Promise<void>((r) => (this.wake = r));
      this.wake = undefined;
      // Woken by the first message of those the thread posted while the owner was busy: the others come in the same
      // turn of the event loop, one callback each, and are taken with it.
      await new Promise<void>((r) => setImmediate(r));
    }
  }

  private takeReady(maxBytes: number, maxVersions: number): Taken {
    const head = this.inbox[0]!;
    if ("error" in head) throw new IavlError(head.error.code as ErrorCode, head.error.message);
    if ("idle" in head) {
      // Idle answers in a row say the same: the newest counts.
      let idle = head.idle;
      while (this.inbox[0] !== undefined && "idle" in this.inbox[0]) idle = (this.inbox.shift() as { idle: number }).idle;
      return { versions: [], idle };
    }
    const versions: Array<Map<string, FeedVersion>> = [];
    let bytes = 0;
    for (let m = this.inbox[0]; m !== undefined && "frames" in m && versions.length < maxVersions && bytes < maxBytes; m = this.inbox[0]) {
      this.inbox.shift();
      const frames = m.frames;
      const size = frames.reduce((n, f) => n + f.length, 0);
      bytes += size;
      this.channel.slots.add(CONSUMED, size);
      versions.push(new Map(this.d.names.map((n, i) => [n, decodeFeedVersion(frames[i]!)])));
    }
    return { versions };
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
