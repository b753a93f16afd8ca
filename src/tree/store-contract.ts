/**
 * What a tree and the store under it exchange, each defined once: how the tree reads values it does not hold, what a
 * commit hands the store, the latest committed version, and the net changes a store reports of a version.
 * @module
 */
import { IavlError } from "../base/errors.js";
import type { Digest } from "../base/hash.js";
import { checkVersion } from "../base/validate.js";
import type { NodeSource, NodeTable } from "./node.js";
import type { VersionLog } from "./version-log.js";

/** Reads the value of committed leaf `leaf` of table `t` (a store may keep values apart from nodes). */
export type ValueOf = (t: NodeTable, leaf: number) => Uint8Array;

/** What the working tree reads of the store under it. */
export interface WorkingStore {
  readonly src: NodeSource;
  readonly valueOf: ValueOf;
  /** True when the store needs the version's log on commit (and answers committed reads by key). */
  readonly logsOps: boolean;
  /** The tree's own copy of a value being set (a store packs them into shared chunks, base/value-arena.ts). */
  copyValue(value: Uint8Array): Uint8Array;
  /** The value of `key` in the last committed version (used when `logsOps`), in an array of the caller's own. */
  committedValue(key: Uint8Array): Uint8Array | undefined;
}

/** What a store receives to persist one version. */
export interface CommitInput {
  version: number;
  /** The version's root (`NONE`: empty). */
  root: number;
  hash: Digest;
  log: VersionLog;
  /** Nodes of older versions that this version replaced (see `Mutator.takeOrphans`). */
  orphans: number[];
}

/** The last committed version as a tree holds it. */
export interface Latest {
  version: number;
  /** Its root (NONE: empty). */
  root: number;
}

/** One net change of a version: the key's new value, or null when the version removed it. */
export interface KeyChange {
  key: Uint8Array;
  value: Uint8Array | null;
}

/** A net change of `version` (see `Tree.changes`). */
export interface VersionChange extends KeyChange {
  version: number;
}

/** Checks a range of versions for a change stream: positive integers, `from` ≤ `to`; throws `INVALID_ARGUMENT`. */
export function checkVersionRange(from: unknown, to: unknown): asserts from is number {
  checkVersion(from);
  checkVersion(to);
  if ((from as number) > (to as number)) throw new IavlError("INVALID_ARGUMENT", `from (${String(from)}) must not be after to (${String(to)})`);
}
