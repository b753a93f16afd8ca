/**
 * How the service follows the writer: the read-only handle moves to the newest whole version at most every
 * `refreshMs`, on the first request after that (no timer: an idle service reads nothing), and at once when a request
 * names a height above the version it knows, so that a client that just saw a commit never gets a false 404.
 * @module
 */
import { IavlError } from "../base/errors.js";
import type { MultiReader } from "../api/multi-reader.js";

/** How often a long poll looks for a new version: a refresh reads a few rows. */
const WAIT_STEP_MS = 5;

/** What a refresh found, for the metrics. */
export type RefreshListener = (latest: number) => void;

/** The versions the service answers from. */
export class Follower {
  private last = Number.NEGATIVE_INFINITY;
  private readonly seen = new Map<number, Date>();

  constructor(
    readonly reader: MultiReader,
    private readonly refreshMs: number,
    private readonly onRefresh: RefreshListener = () => undefined,
  ) {
    this.note(reader.latest);
  }

  /** The newest whole version (0: none yet), refreshed when the last refresh is older than `refreshMs`. */
  latest(): number {
    if (performance.now() - this.last >= this.refreshMs) this.refresh();
    return this.reader.latest;
  }

  /**
   * The version a request reads: `height`, or the latest when undefined. A height above the latest known refreshes
   * first; `VERSION_NOT_FOUND` when it is still above (or when nothing was committed yet).
   */
  resolve(height: number | undefined): number {
    let latest = this.latest();
    if (height !== undefined && height > latest) latest = this.refresh();
    const v = height ?? latest;
    if (v > latest || v === 0) {
      throw new IavlError("VERSION_NOT_FOUND", latest === 0 ? "no version has been committed yet" : `version ${v} was never committed (the latest is ${latest})`);
    }
    return v;
  }

  /**
   * Waits until `version` is whole, looking every {@link WAIT_STEP_MS}, for at most `ms`; returns the latest then. A
   * replica's long poll: it learns of a commit within a few milliseconds without asking again and again.
   */
  async waitFor(version: number, ms: number): Promise<number> {
    const deadline = performance.now() + ms;
    let latest = this.refresh();
    while (latest < version && performance.now() < deadline) {
      await new Promise((r) => setTimeout(r, Math.min(WAIT_STEP_MS, Math.max(0, deadline - performance.now()))));
      latest = this.refresh();
    }
    return latest;
  }

  /** When this service first saw `version` as the latest (now, for a version it did not see arrive). */
  seenAt(version: number): Date {
    return this.seen.get(version) ?? new Date();
  }

  private refresh(): number {
    this.last = performance.now();
    const v = this.reader.refresh();
    this.note(v);
    this.onRefresh(v);
    return v;
  }

  private note(v: number): void {
    if (v === 0 || this.seen.has(v)) return;
    this.seen.set(v, new Date());
    // Only recent versions matter (the block time CometBFT's status shows for the latest).
    if (this.seen.size > 64) this.seen.delete(this.seen.keys().next().value!);
  }
}
