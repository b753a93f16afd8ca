/**
 * What a tree and the store under it exchange, each defined once: how the tree reads values it does not hold, what a
 * commit hands the store, the latest committed version, the net changes a store reports of a version, and a key's
 * history (the versions where it changed) with the options that page through it.
 * @module
 */
import { z } from "zod";
import { IavlError } from "../base/errors.js";
import { parseOptions } from "../base/options.js";
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

/**
 * One operation of a version as it was applied: a set of `value`, or a removal (`value` null). A set that a later
 * operation of the same version overrides carries an empty value: only the order of inserts and removals shapes the
 * tree, and only a key's last value in the version reaches a hash, so a replay of these reaches the same root hash.
 */
export interface KeyOp {
  key: Uint8Array;
  value: Uint8Array | null;
}

/** The operations of a committed version in their order, and the root hash they led to. */
export interface VersionOperations {
  version: number;
  hash: Uint8Array;
  ops: KeyOp[];
}

/** Checks a range of versions for a change stream: positive integers, `from` ≤ `to`; throws `INVALID_ARGUMENT`. */
export function checkVersionRange(from: unknown, to: unknown): asserts from is number {
  checkVersion(from);
  checkVersion(to);
  if ((from as number) > (to as number)) throw new IavlError("INVALID_ARGUMENT", `from (${String(from)}) must not be after to (${String(to)})`);
}

const positive = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);

/** Options of `history`, validated. */
export const historyOptionsSchema = z
  .object({
    /** First version searched; default (and at least) the oldest version from which every version's changes are kept. */
    from: positive.optional(),
    /** Last version searched; default the latest. */
    to: positive.optional(),
    /** Most entries in one answer (1 … 10,000); default 100. */
    limit: z.number().int().min(1).max(10_000).default(100),
    /** Oldest first instead of newest first. */
    reverse: z.boolean().default(false),
    /** Also give the key's last change before `from`, when version `from − 1` is kept. */
    before: z.boolean().default(false),
  })
  .strict();

/** Options of `history` as a caller gives them. */
export type HistoryOptions = z.input<typeof historyOptionsSchema>;
/** Options of `history` with their defaults. */
export type HistoryQuery = z.output<typeof historyOptionsSchema>;

/** A version where a key was set (with its value) or removed (value null). */
export interface HistoryEntry {
  version: number;
  value: Uint8Array | null;
}

/** One page of a key's history. */
export interface KeyHistory {
  /** The versions searched, inclusive (`from` raised to the oldest version whose changes are kept). */
  from: number;
  to: number;
  /** Newest first, or oldest first with `reverse`. */
  entries: HistoryEntry[];
  /**
   * With `before`: the key's last change before `from`, so its value at `from − 1` (null: never set before). Absent
   * when version `from − 1` is no longer kept, since the rows that would tell are pruned with it.
   */
  before?: HistoryEntry | null;
  /** When `limit` cut the page short: the version of the first entry left out, the next page's `to` (or `from`, reversed). */
  next?: number;
}

/** Validates `history`'s options (`INVALID_OPTIONS` naming the field). */
export function historyQuery(options: unknown): HistoryQuery {
  const q = parseOptions(historyOptionsSchema, options);
  if (q.from !== undefined && q.to !== undefined && q.from > q.to) {
    throw new IavlError("INVALID_ARGUMENT", `from (${q.from}) must not be after to (${q.to})`);
  }
  return q;
}

/**
 * The versions a history reads, given that every version's changes are kept from `unbroken` to `latest`:
 * `VERSION_NOT_FOUND` past the latest, `VERSION_PRUNED` when the range ends before `unbroken`.
 */
export function historyRange(q: HistoryQuery, unbroken: number | undefined, latest: number): { from: number; to: number } {
  const to = q.to ?? latest;
  if (to > latest || unbroken === undefined) {
    throw new IavlError("VERSION_NOT_FOUND", `version ${to} was never committed (latest is ${latest})`);
  }
  if (to < unbroken) throw new IavlError("VERSION_PRUNED", `the changes up to version ${to} are gone (they are kept from version ${unbroken} on)`);
  return { from: Math.max(q.from ?? unbroken, unbroken), to };
}

/**
 * The answer from up to `limit + 1` entries read in the page's order (the extra one, if any, names the next page) and
 * the last change before the range (undefined: unknown).
 */
export function historyPage(range: { from: number; to: number }, q: HistoryQuery, rows: HistoryEntry[], before?: HistoryEntry | null): KeyHistory {
  const out: KeyHistory = { ...range, entries: rows.slice(0, q.limit) };
  if (q.before && before !== undefined) out.before = before;
  if (rows.length > q.limit) out.next = rows[q.limit]!.version;
  return out;
}
