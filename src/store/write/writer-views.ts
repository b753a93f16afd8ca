/**
 * The committed versions as their writer reads them: the live tree for the latest, trees rebuilt from checkpoints
 * for older ones, and a version still in flight to the writer thread waited for before it is read.
 * @module
 */
import type { ReadonlyTree } from "../../tree/readonly-tree.js";
import type { HistoryQuery, KeyChange, KeyHistory, KeyOp, Latest, ValueOf } from "../../tree/store-contract.js";
import { storedHistory } from "../read/key-history.js";
import type { VersionRow } from "../../sqlite/rows.js";
import type { StoreReader } from "../../sqlite/store-reader.js";
import type { NodeLoader } from "../node-loader.js";
import { RebuiltTrees, type VersionTree } from "../read/rebuild.js";
import { startRead, storedValue, VersionRead } from "../read/version-read.js";
import { VersionView } from "../read/version-view.js";
import { latestValue } from "../read/vouched-reads.js";
import type { WriteQueue } from "./write-queue.js";

/** Views of a writer's committed versions. */
export class WriterViews {
  readonly valueOf: ValueOf;
  private readonly trees: RebuiltTrees;

  constructor(
    private readonly read: StoreReader,
    private readonly src: NodeLoader,
    /** The background writer, if started: reads of a version it holds wait for it to land. */
    private readonly queueOf: () => WriteQueue | undefined,
    /** The last committed version, whose tree is the live one. */
    private readonly live: () => Latest,
    /**
     * The owner's count of prunes asked, undefined while one runs. A version read that began with a count, while the
     * count stays, cannot see the version pruned (only the owner prunes while it holds the lock, and no rollback runs
     * beside a writer), so its gets skip the check that the version is still kept: a fifth of a historic get.
     */
    private readonly pruneEpoch: () => number | undefined = () => undefined,
  ) {
    this.trees = new RebuiltTrees(read);
    this.valueOf = storedValue(read);
  }

  /** The value of `key` in the last committed version as its rows hold it (undefined: absent, as its tree agrees). */
  latest(key: Uint8Array): Uint8Array | undefined {
    return latestValue(this.read, key, this.live(), this.src);
  }

  /** A view of committed `version`; `alive` throws once the owner closed. */
  view(version: number, alive: () => void): ReadonlyTree {
    return this.open(version, alive);
  }

  /** The net changes that made committed `version`, in key order. */
  changes(version: number, alive: () => void): Iterable<KeyChange> {
    return this.open(version, alive).changes();
  }

  /** The operations that made committed `version`, in their order, once it has landed. */
  operations(version: number, alive: () => void): KeyOp[] {
    return this.open(version, alive).operations();
  }

  /** A page of `key`'s history up to committed version `latest`, once that version has landed. */
  history(key: Uint8Array, q: HistoryQuery, latest: number): KeyHistory {
    this.queueOf()?.waitFor(latest);
    return storedHistory(this.read, key, q, latest);
  }

  /** Committed versions still readable, oldest first (those still in flight to the writer thread too). */
  versions(): number[] {
    // In flight first: a version landing between the two reads is then seen by at least one of them.
    const inFlight = this.queueOf()?.inFlight() ?? [];
    const stored = this.read.versions.list();
    return [...stored, ...inFlight.filter((v) => v > (stored[stored.length - 1] ?? 0))];
  }

  /** Drops the rebuilt trees. */
  clear(): void {
    this.trees.clear();
  }

  private open(version: number, alive: () => void): VersionView {
    this.queueOf()?.waitFor(version);
    // The count before the row: a prune running while the row is read shows as none.
    const epoch = this.pruneEpoch();
    const start = startRead(this.read, version);
    const kept = epoch === undefined ? undefined : (): boolean => this.pruneEpoch() === epoch;
    return new VersionView(new VersionRead(this.read, start, alive, kept), () => this.treeAt(start.row));
  }

  /**
   * The tree of a committed version, asked for at each read that needs it: the live one while the version is the
   * latest, else one rebuilt from the checkpoint before it (the live tree's nodes of older versions are freed).
   */
  private treeAt(row: VersionRow): VersionTree {
    const live = this.live();
    if (row.version === live.version) return { root: live.root, src: this.src };
    return this.trees.tree(row);
  }
}
