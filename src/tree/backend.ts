/**
 * What a tree needs from where it keeps its versions: memory, or a store on disk.
 * @module
 */
import type { Node, NodeSource } from "./node.js";
import type { ValueOf } from "./proof.js";
import type { ReadonlyTree } from "./snapshot.js";
import type { PruneProgress, PruneResult } from "../prune/pruner.js";

/** Options of a prune. */
export interface PruneOptions {
  /** Keep every version that is a multiple of this (snapshots), as far as it was committed as a checkpoint. */
  keepEvery?: number | undefined;
  /** Progress of the prune's phases. */
  onProgress?: PruneProgress | undefined;
}

/** One operation of the working version, in order; `leaf` is the leaf a set created (undefined for a remove). */
export interface Op {
  key: Uint8Array;
  leaf: Node | undefined;
}

/** The net change of one key in the working version (null = removed). */
export interface Change {
  key: Uint8Array;
  value: Uint8Array | null;
}

/** What {@link Backend.commit} receives. */
export interface CommitInput {
  version: number;
  root: Node | undefined;
  hash: Uint8Array;
  /** Every set and remove in order (only for backends that log operations). */
  ops: Op[];
  /** The net change per key (keyed by the key's latin1 string) and the final leaf of each set key. */
  changes: Map<string, Change>;
  finalLeaves: Map<string, Node>;
}

/** @internal The storage behind a {@link Tree}. */
export interface Backend {
  readonly src: NodeSource;
  readonly valueOf: ValueOf;
  /** True when the backend needs `ops`/`changes` on commit (and answers committed reads by key). */
  readonly logsOps: boolean;
  /** The last committed version at open (0 for none) and its root. */
  readonly opened: { version: number; root: Node | undefined };
  /** The value of `key` in the last committed version (used when `logsOps`). */
  committedValue(key: Uint8Array): Uint8Array | undefined;
  /** Persists a version; throws with nothing changed when it cannot. */
  commit(c: CommitInput): void;
  /** A view of a committed version; `latestRoot` is the root of the last committed version. */
  view(version: number, latest: { version: number; root: Node | undefined }, guard: () => void): ReadonlyTree;
  /** Committed versions still readable, oldest first. */
  versions(): number[];
  /** Removes committed versions ≤ `upTo` (never the latest; with `keepEvery`, not its checkpointed multiples). */
  prune(upTo: number, opts: PruneOptions): Promise<PruneResult>;
  /** Resolves when every committed version is durable. */
  flush(): Promise<void>;
  close(): void;
}
