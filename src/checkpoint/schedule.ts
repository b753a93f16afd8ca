/**
 * When a tree checkpoint is written: every `interval` versions, at each snapshot pruning keeps (so that its tree stays
 * whole after the versions around it go), and at the next commit once eviction found the resident nodes mostly dirty.
 * @module
 */
import type { VersionReader } from "../sqlite/version-reader.js";
import { replayStart } from "./replay-start.js";

/** The checkpoint schedule of one writer. */
export class CheckpointSchedule {
  /** Eviction asked for a checkpoint since the last one began. */
  private wanted = false;
  /** ... and for one written whole in the next commit (memory is over the budget). */
  private wantedNow = false;

  constructor(
    private readonly interval: number,
    /** Versions that are multiples of this are checkpoints; undefined: none kept as snapshots. */
    private readonly snapshotEvery: number | undefined,
    /** The last checkpoint written (0: none). */
    private last: number,
  ) {}

  /** The schedule of a store reopened at `latest` (0: none): it goes on from the checkpoint replays start from. */
  static resume(versions: VersionReader, latest: number, interval: number, snapshotEvery: number | undefined): CheckpointSchedule {
    const last = latest === 0 ? 0 : (replayStart(versions, latest).base?.version ?? 0);
    return new CheckpointSchedule(interval, snapshotEvery, last);
  }

  /** True when eviction asked for a checkpoint since the last one began. */
  get asked(): boolean {
    return this.wanted;
  }

  /** True when eviction asked for a checkpoint written whole in the next commit. */
  get askedNow(): boolean {
    return this.wantedNow;
  }

  /** The last checkpoint written (0: none). */
  get lastWritten(): number {
    return this.last;
  }

  /** True when committing `version` must write a checkpoint. */
  due(version: number): boolean {
    const every = this.snapshotEvery;
    return this.wanted || version - this.last >= this.interval || (every !== undefined && version % every === 0);
  }

  /** `version` was committed as a checkpoint. */
  written(version: number): void {
    this.last = version;
    this.wanted = false;
    this.wantedNow = false;
  }

  /** True when `latest` is not a checkpoint: closing the store should make it one. */
  needsClose(latest: number): boolean {
    return this.last !== latest;
  }

  /** The next commit checkpoints, so that the nodes it leaves clean can be evicted; `now`: whole, in that commit. */
  askNext(now = false): void {
    this.wanted = true;
    this.wantedNow ||= now;
  }
}
