/**
 * A live replica of a source `iavlite serve`: it starts from the source's snapshot (or from where it last
 * committed), then replays every version's operations in their original order and commits a version only when each
 * store's root hash (and the app hash) equals the source's. Behind the source, it applies the versions its feed
 * thread has read ahead many to one transaction. A source whose history is not the replica's (rolled back, then
 * committed again) is told by comparing the newest version both hold, and stops it with `CORRUPT` naming the last
 * version both share; a version the source no longer holds the operations of makes it start again from a snapshot;
 * a source that goes away is waited for, asking again less and less often.
 * @module
 */
import { existsSync, readdirSync } from "node:fs";
import { z } from "zod";
import { equalBytes, toHex } from "../base/bytes.js";
import { IavlError, isIavlError } from "../base/errors.js";
import { parseOptions } from "../base/options.js";
import { bootstrap } from "./bootstrap.js";
import { AHEAD_BYTES, Feed } from "./feed.js";
import { LocalReplica, type ReplicaStoreOptions } from "./local-replica.js";
import { checkSourceUrl, Source, type SourceStatus } from "./source.js";

const fn = <T>() => z.custom<T>((v) => typeof v === "function", "must be a function");

const followOptionsSchema = z
  .object({
    /** Versions asked for in one request. Default 32. */
    batch: z.number().int().min(1).max(1000).default(32),
    /** How long one request waits at the source for a version not committed yet, ms. Default 2000. */
    waitMs: z.number().int().min(0).max(60_000).default(2_000),
    /** The first pause before asking again after the source failed or could not be reached, ms. Default 500. */
    retryMs: z.number().int().min(10).max(600_000).default(500),
    /** The longest pause: each one after another failure doubles, up to this, ms. Default 30000. */
    maxRetryMs: z.number().int().min(10).max(3_600_000).default(30_000),
    /** Pruning of the replica's own stores (it may keep fewer or more versions than the source). */
    keepRecent: z.number().int().min(1).optional(),
    keepEvery: z.number().int().min(1).optional(),
    memoryBudgetMiB: z.number().int().min(8).max(1_048_576).optional(),
    /** Called after each version committed here, once it is durable. */
    onVersion: fn<(version: number) => void>().optional(),
    /** Called with what the replica did besides following: a snapshot taken, a source that went away and came back. */
    onNote: fn<(message: string) => void>().optional(),
    /** Stops the replica: {@link follow} then returns once the versions in hand are committed or dropped. */
    signal: z.custom<AbortSignal>((v) => v instanceof AbortSignal, "must be an AbortSignal").optional(),
  })
  .strict();

/** Options of {@link follow}. */
export type FollowOptions = z.input<typeof followOptionsSchema>;

/**
 * Versions applied in one transaction, at most: bounded by their frames' bytes too ({@link GROUP_BYTES}), and never
 * more than the feed has read (a replica that keeps up applies each version as it comes).
 */
const GROUP_VERSIONS = 256;
/** Frame bytes applied in one transaction, at most (and one version more): what the feed thread reads ahead. */
const GROUP_BYTES = AHEAD_BYTES;

/**
 * Follows the service at `url` into the folder `dir` until `options.signal` aborts; returns the last version
 * committed here. Throws `INVALID_ARGUMENT` at once for a `url` that is not an http(s) URL; `CORRUPT` when a version's
 * hash differs from the source's, or when the source's history is not the replica's (the message names the last
 * version both share and how to follow from there); and what the folder's store throws (`LOCKED` when another writer
 * holds it).
 */
export async function follow(url: string, dir: string, options: FollowOptions = {}): Promise<number> {
  checkSourceUrl(url);
  const o = parseOptions(followOptionsSchema, options);
  const signal = o.signal ?? new AbortController().signal;
  const note = o.onNote ?? (() => undefined);
  const source = new Source(url, signal);
  const storeOptions: ReplicaStoreOptions = { keepRecent: o.keepRecent, keepEvery: o.keepEvery, memoryBudgetMiB: o.memoryBudgetMiB };
  const away = new Backoff(o.retryMs, o.maxRetryMs, signal, note);

  let local: LocalReplica | undefined;
  // Whether the source no longer holds the operations after this replica's last version.
  let stale = false;
  try {
    while (!signal.aborted) {
      try {
        const status = await source.status();
        const stores = status.appHash === null ? undefined : status.stores.map((s) => s.name);
        if (local === undefined) {
          if ((stale || isEmpty(dir)) && status.latest > 0) {
            note(`starting from the source's snapshot of version ${status.latest}`);
            await bootstrap(source, dir, status.latest, stores, storeOptions);
            stale = false;
          }
          local = LocalReplica.open(dir, stores, storeOptions);
        }
        const f = new Follow(url, dir, source, local, stores ?? [status.stores[0]!.name], status, o, note);
        await f.compare(status.latest);
        // The source is back once its feed answers (its status alone may answer while the feed fails).
        await f.run(signal, () => away.back());
      } catch (e) {
        if (signal.aborted) break;
        if (isIavlError(e, "VERSION_PRUNED") && local !== undefined) {
          note(`the source no longer holds version ${local.version + 1}'s operations: starting again from its snapshot`);
          local.close();
          local = undefined;
          stale = true;
        } else if (isIavlError(e, "SOURCE_UNAVAILABLE")) {
          await away.wait((e as Error).message);
        } else if (isIavlError(e, "VERSION_PRUNED") || isIavlError(e, "VERSION_NOT_FOUND") || isIavlError(e, "VERSION_ROLLED_BACK")) {
          // A snapshot the source pruned while it was read, a version it dropped while it was asked: ask again.
          note(`${(e as Error).message}; asking again in ${o.retryMs} ms`);
          await pause(o.retryMs, signal);
        } else {
          const disk = diskFailure(e);
          if (disk === undefined || local === undefined) throw e;
          // The versions being applied did not land (a group lands whole or not at all); the handle is spent.
          const multi = local.isMulti;
          local.close();
          local = undefined;
          const held = LocalReplica.onDisk(dir, multi);
          throw new IavlError(disk.code, `${disk.message}; the replica holds version ${held}: follow again once the disk has room`, { cause: e });
        }
      }
    }
    return local?.version ?? 0;
  } finally {
    local?.close();
  }
}

/** The full disk or failed write behind `e` (itself, or what it wraps), if any. */
function diskFailure(e: unknown): IavlError | undefined {
  for (let c: unknown = e; c instanceof Error; c = c.cause) {
    if (isIavlError(c, "DISK_FULL") || isIavlError(c, "IO_ERROR")) return c as IavlError;
  }
  return undefined;
}

/**
 * One run of a replica against its source, from the source's status: the check of the replica's versions against
 * the source's, and the versions applied until something fails or the replica stops.
 */
class Follow {
  /** The source's latest version last reported below this replica's, so that the wait is told once. */
  private behind: number | undefined;

  constructor(
    private readonly url: string,
    private readonly dir: string,
    private readonly source: Source,
    private readonly local: LocalReplica,
    private readonly names: string[],
    private readonly status: SourceStatus,
    private readonly o: { batch: number; waitMs: number; onVersion?: ((v: number) => void) | undefined },
    private readonly note: (message: string) => void,
  ) {}

  /**
   * Compares this replica with the source whose latest version is `latest`, at the newest version both hold: this
   * replica's last, or the source's latest when it is behind. Throws `CORRUPT` when their hashes differ. A
   * source behind whose version agrees is waited for; one that no longer holds the replica's last version is trusted
   * until the next version, whose hashes are the check.
   */
  async compare(latest: number): Promise<void> {
    const mine = this.local.version;
    if (mine === 0) return;
    const at = Math.min(latest, mine);
    const agree = at > 0 ? await this.agreeAt(at) : undefined;
    if (agree === false) throw await this.diverged(at);
    if (latest < mine && this.behind !== latest) {
      this.behind = latest;
      this.note(`the source is at version ${latest}, behind this replica's ${mine}: waiting for it to commit version ${mine + 1}`);
    }
  }

  /**
   * Applies the source's versions after the replica's last, in groups of those read ahead, until it stops or fails;
   * `answered` is called after each answer of the feed.
   */
  async run(signal: AbortSignal, answered: () => void): Promise<void> {
    const feed = new Feed({ url: this.url, names: this.names, from: this.local.version + 1, batch: this.o.batch, waitMs: this.o.waitMs }, signal);
    try {
      while (!signal.aborted) {
        const got = await feed.take(GROUP_BYTES, GROUP_VERSIONS);
        answered();
        if (got.idle !== undefined) {
          // Nothing newer at the source: still the same history?
          await this.compare(got.idle);
          continue;
        }
        const before = this.local.version;
        try {
          this.local.applyAll(got.versions);
        } catch (e) {
          this.landed(before);
          // A version whose operations do not make the source's hash: the source's history may not be this one.
          if (isIavlError(e, "CORRUPT")) await this.compare(this.local.version);
          throw e;
        }
        this.landed(before);
      }
    } finally {
      await feed.close();
    }
  }

  /** Tells of the versions committed after `before`: they are durable now. */
  private landed(before: number): void {
    for (let v = before + 1; v <= this.local.version; v++) this.o.onVersion?.(v);
  }

  /** Whether `version` has the same hash here and at the source; undefined when either does not hold it. */
  private async agreeAt(version: number): Promise<boolean | undefined> {
    const mine = this.local.hashAt(version);
    if (mine === undefined) return undefined;
    const theirs = await this.theirs(version);
    return theirs === undefined ? undefined : equalBytes(mine, theirs);
  }

  /** The source's hash of `version` (app hash or root hash, as {@link LocalReplica.hashName}); undefined when it holds none. */
  private async theirs(version: number): Promise<Uint8Array | undefined> {
    try {
      const h = await this.source.hashes(this.names[0]!, version);
      return h.appHash ?? h.hash;
    } catch (e) {
      if (isIavlError(e, "VERSION_PRUNED") || isIavlError(e, "VERSION_NOT_FOUND")) return undefined;
      throw e;
    }
  }

  /**
   * The error for histories that differ at `at`: the newest version both hold with equal hashes (found by bisection
   * over the versions both hold before `at`: past a divergence no version agrees again), and the commands that
   * follow the source from there. Nothing of the replica is changed.
   */
  private async diverged(at: number): Promise<IavlError> {
    const what = this.local.hashName;
    const mine = toHex(this.local.hashAt(at)!);
    const theirs = toHex((await this.theirs(at)) ?? new Uint8Array());
    const earliest = Math.max(...this.status.stores.map((s) => s.earliest));
    const both = this.local.versions().filter((v) => v < at && v >= earliest);
    let shared: number | undefined;
    // Invariant: every version of both[..lo) agrees, none of both[hi..) does.
    let [lo, hi] = [0, both.length];
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((await this.agreeAt(both[mid]!)) === true) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0) shared = both[lo - 1];
    const head = `the source's history is not this replica's: at version ${at} the source's ${what} is ${theirs} and this replica's is ${mine}`;
    const left = "the replica was left as it is";
    if (shared === undefined) {
      const oldest = both.length > 0 ? `the oldest both hold, ${both[0]}` : "none";
      return new IavlError(
        "CORRUPT",
        `${head}, and no earlier version both hold agrees (${oldest}); ${left}. To follow this source, start the replica again from its snapshot: move ${this.dir} away, then run iavlite follow ${this.url} ${this.dir}`,
      );
    }
    return new IavlError(
      "CORRUPT",
      `${head}; the last version both hold with the same ${what} is ${shared}, and ${left}. To follow this source from there: iavlite rollback ${this.dir} --to ${shared} --yes, then iavlite follow ${this.url} ${this.dir}`,
    );
  }
}

/**
 * Waits on a source that cannot be reached: a pause that doubles after each failure up to a cap, and one note when
 * the source goes away and one when it answers again, rather than one a try.
 */
class Backoff {
  private delay: number;
  private away = false;

  constructor(
    private readonly first: number,
    private readonly max: number,
    private readonly signal: AbortSignal,
    private readonly note: (message: string) => void,
  ) {
    this.delay = first;
  }

  /** After a failure: tells of it if the source was answering, and pauses. */
  async wait(why: string): Promise<void> {
    if (!this.away) this.note(`source unreachable: ${why}; retrying, at first in ${this.first} ms and then less often, up to every ${this.max} ms`);
    this.away = true;
    await pause(this.delay, this.signal);
    this.delay = Math.min(this.delay * 2, this.max);
  }

  /** After an answer: tells that the source is back if it was away, and starts the pauses over. */
  back(): void {
    if (this.away) this.note("source back");
    this.away = false;
    this.delay = this.first;
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** True when `dir` is missing or holds nothing. */
function isEmpty(dir: string): boolean {
  return !existsSync(dir) || readdirSync(dir).length === 0;
}
