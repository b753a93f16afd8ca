/**
 * What a {@link Tree} needs from where it keeps its versions: memory, or a store on disk.
 * @module
 */
import type { ReadonlyTree } from "../tree/readonly-tree.js";
import type { PruneProgress, PruneResult } from "../prune/pruner.js";
import type { CommitInput, HistoryQuery, KeyChange, KeyHistory, KeyOp, Latest, WorkingStore } from "../tree/store-contract.js";

/** Options of a prune. */
export interface PruneOptions {
  /** Keep every version that is a multiple of this (snapshots), as far as it was committed as a checkpoint. */
  keepEvery?: number | undefined;
  /** Progress of the prune's phases. */
  onProgress?: PruneProgress | undefined;
}

/** @internal The storage behind a {@link Tree}. */
export interface Backend extends WorkingStore {
  /** The last committed version at open (0 for none) and its root. */
  readonly opened: Latest;
  /**
   * Persists a version; throws with nothing changed when it cannot. On success the backend owns `c.orphans`, and
   * frees each once no version it keeps holds it.
   */
  commit(c: CommitInput): void;
  /**
   * Opens a group: the versions committed until {@link endGroup} land together (one transaction on disk), and none of
   * them is durable before it.
   */
  beginGroup(): void;
  /** Ends the group: its versions land (`land`), or none of them does and the backend must not be used again. */
  endGroup(land: boolean): void;
  /** A view of committed `version` (at most the last committed); `alive` throws once the tree closed. */
  view(version: number, alive: () => void): ReadonlyTree;
  /** The operations that made committed `version`, in their order (`VERSION_PRUNED` when they are not kept). */
  operations(version: number, alive: () => void): KeyOp[];
  /** The net changes that made committed `version`, in key order (see {@link Tree.changes}). */
  changes(version: number, alive: () => void): Iterable<KeyChange>;
  /** A page of `key`'s history up to committed version `latest` (see {@link Tree.history}); `alive` as for views. */
  history(key: Uint8Array, q: HistoryQuery, latest: number, alive: () => void): KeyHistory;
  /** Committed versions still readable, oldest first. */
  versions(): number[];
  /** Removes committed versions ≤ `upTo` (never the latest; with `keepEvery`, not its checkpointed multiples). */
  prune(upTo: number, opts: PruneOptions): Promise<PruneResult>;
  /** Resolves when every committed version is durable. */
  flush(): Promise<void>;
  /** Releases everything; returns once no thread of the backend is working any more. */
  close(): void;
}
