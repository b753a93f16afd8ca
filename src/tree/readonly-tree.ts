/**
 * Read access to one committed version: the interface every view implements, and the types of its calls' options
 * and answers, each defined here once.
 * @module
 */
import type { ics23 } from "@confio/ics23";
import type { ExportNode } from "./export-node.js";

/** Bounds of an iteration: `start` inclusive, `end` exclusive, in ascending order unless `reverse`. */
export interface IterateOptions {
  start?: Uint8Array | undefined;
  end?: Uint8Array | undefined;
  reverse?: boolean | undefined;
}

/** A commitment proof as `@confio/ics23` types it. */
export type CommitmentProof = ics23.ICommitmentProof;

/** What an audit found. */
export interface AuditReport {
  /** True when no fault was found. */
  ok: boolean;
  version: number;
  /** Nodes checked (leaves and inner nodes). */
  nodes: number;
  /** Leaves checked. */
  leaves: number;
  /** One line per fault, naming what disagrees. */
  faults: string[];
}

/** Options of an audit. */
export interface AuditOptions {
  /** Called now and then with the number of nodes checked so far. */
  onProgress?: ((nodes: number) => void) | undefined;
}

/** A committed version of a tree: every read that does not change it. */
export interface ReadonlyTree {
  /** The version this view reads. */
  readonly version: number;
  /** Root hash of this version. */
  readonly hash: Uint8Array;
  /** Number of keys in this version. */
  readonly size: number;
  /** The value of `key`, or undefined. */
  get(key: Uint8Array): Uint8Array | undefined;
  /** True when `key` is present. */
  has(key: Uint8Array): boolean;
  /** `[key, value]` pairs in key order; `start` inclusive, `end` exclusive; descending when `reverse`. */
  iterate(opts?: IterateOptions): IterableIterator<[Uint8Array, Uint8Array]>;
  /** An ICS23 existence proof when `key` is present, otherwise a non-existence proof, against {@link hash}. */
  proof(key: Uint8Array): CommitmentProof;
  /**
   * The nodes of this version in post-order, as cosmos/iavl's exporter streams them for state sync. Memory does
   * not grow with the tree: nodes are loaded, in bounded batches, as the walk reaches them and dropped after.
   */
  export(): IterableIterator<ExportNode>;
  /**
   * Checks this version whole: every node rehashed and compared with the hash kept for it, the tree's structure, and
   * the key/value index against the leaves. Reads every node: as slow as an export.
   */
  audit(options?: AuditOptions): AuditReport;
}
