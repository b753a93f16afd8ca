/**
 * How the service follows the writer: the read-only handle moves to the newest whole version at most every
 * `refreshMs`, on the first request after that (no timer: an idle service reads nothing), and at once when a request
 * names a height above the version it knows, so that a client that just saw a commit never gets a false 404. A folder
 * replaced whole under the service (a replica that started again from a snapshot, a restore) is opened anew.
 * @module
 */
import { statSync } from "node:fs";
import { IavlError } from "../base/errors.js";
import type { MultiReader } from "../api/multi-reader.js";

/** How often a long poll looks for a new version: a refresh reads a few rows. */
const WAIT_STEP_MS = 5;

/** How long a replaced folder's handle stays open for the answers still streaming from it, ms. */
const REPLACED_GRACE_MS = 30_000;

/** What a refresh found, for the metrics. */
export type RefreshListener = (latest: number) => void;

/** The folder under the service, and opening it again. */
export interface FolderSource {
  dir: string;
  open(): MultiReader;
}

/** The versions the service answers from. */
export class Follower {
  private last = Number.NEGATIVE_INFINITY;
  private readonly seen = new Map<number, Date>();
  private current: MultiReader;
  private identity: string | undefined;
  private readonly retired = new Set<MultiReader>();
  /** Set by {@link stopWaiting} (and {@link close}): a long poll still waiting then ends as if its time were up. */
  private stopping = false;

  constructor(
    reader: MultiReader,
    private readonly refreshMs: number,
    private readonly onRefresh: RefreshListener = () => undefined,
    /** Where the reader came from, so that a folder replaced whole is opened anew; none for a reader given as is. */
    private readonly folder?: FolderSource,
  ) {
    this.current = reader;
    this.identity = folder === undefined ? undefined : folderIdentity(folder.dir);
    this.note(reader.latest);
  }

  /** The read-only handle answers come from. */
  get reader(): MultiReader {
    return this.current;
  }

  /** Ends the long polls waiting now and to come, so that a closing service need not wait them out. */
  stopWaiting(): void {
    this.stopping = true;
  }

  /** Closes the handle, and those of replaced folders still open. */
  close(): void {
    this.stopping = true;
    this.current.close();
    for (const r of this.retired) r.close();
    this.retired.clear();
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
   * replica's long poll: it learns of a commit within a few milliseconds without asking again and again. A service
   * closing meanwhile ends the wait with the latest it knew, an answer like a wait that ran out, not an error.
   */
  async waitFor(version: number, ms: number): Promise<number> {
    const deadline = performance.now() + ms;
    let latest = this.refresh();
    while (latest < version && performance.now() < deadline) {
      await new Promise((r) => setTimeout(r, Math.min(WAIT_STEP_MS, Math.max(0, deadline - performance.now()))));
      if (this.stopping) break;
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
    this.reopenIfReplaced();
    const v = this.current.refresh();
    this.note(v);
    this.onRefresh(v);
    return v;
  }

  /** Opens the folder anew when it is not the one the handle was opened on (and it can be opened by now). */
  private reopenIfReplaced(): void {
    const id = this.folder === undefined ? undefined : folderIdentity(this.folder.dir);
    if (id === undefined || id === this.identity) return;
    let next: MultiReader;
    try {
      next = this.folder!.open();
    } catch {
      // Still being put in place: the old handle answers until a later refresh.
      return;
    }
    const old = this.current;
    this.current = next;
    this.identity = id;
    this.seen.clear();
    this.retired.add(old);
    setTimeout(() => {
      if (this.retired.delete(old)) old.close();
    }, REPLACED_GRACE_MS).unref();
  }

  private note(v: number): void {
    if (v === 0 || this.seen.has(v)) return;
    this.seen.set(v, new Date());
    // Only recent versions matter (the block time CometBFT's status shows for the latest).
    if (this.seen.size > 64) this.seen.delete(this.seen.keys().next().value!);
  }
}

/** Which folder `dir` is now (its device and inode: a folder renamed into its place is another), or undefined. */
function folderIdentity(dir: string): string | undefined {
  try {
    const s = statSync(dir);
    return `${s.dev}:${s.ino}`;
  } catch {
    return undefined;
  }
}
