/**
 * The answers themselves, shared by the v1 API and the CometBFT RPC: a key at a version with its two proofs, and a
 * page of a range. Each answer reads one whole version: every read is checked by the store (a version pruned or
 * rolled back meanwhile throws `VERSION_PRUNED` / `VERSION_ROLLED_BACK`), and the version is chosen once, first. And
 * the v1 routes' query-string parameters, each a JSON schema that says in words what it allows.
 * @module
 */
import { equalBytes } from "../base/bytes.js";
import { IavlError, isIavlError } from "../base/errors.js";
import { ApiError } from "./errors.js";
import type { Follower } from "./follow.js";
import { type CommitmentProof } from "../tree/readonly-tree.js";
import type { KeyHistory } from "../tree/store-contract.js";

// The query-string parameters of the v1 routes, each a JSON schema whose `description` says in words what it allows:
// the route's schema checks the parameter, and a request that fails the check is answered with that description
// (errors.ts's validationError), never with the validator's text. The checks made past the schema (a height of 0, a
// page larger than the service allows) say the same words.

/** The largest height (or version) a request may name: the largest integer a JSON number holds exactly. */
const MAX_HEIGHT = Number.MAX_SAFE_INTEGER;

/** What a height parameter allows, in words. */
const HEIGHT_RULE = `a whole number from 1 to ${MAX_HEIGHT}`;

/** What a page's `limit` allows, in words, when the service allows `max` pairs or entries a page. */
function limitRule(max: number): string {
  return `a whole number from 1 to ${max}`;
}

/** A version: decimal digits, at most 16 ({@link parseHeight} refuses 0 and what is past MAX_HEIGHT, in the same words). */
export const heightParam = { type: "string", pattern: "^[0-9]{1,16}$", description: HEIGHT_RULE } as const;

/** `true` or `false`. */
export const boolParam = { type: "string", enum: ["true", "false"], description: "true or false" } as const;

/** The store's name: required on a multi-store folder ({@link pickStore} says so, with the names). */
export const storeParam = { type: "string", description: "the name of one store" } as const;

/** A page's size, at most `max` ({@link checkLimit} refuses 0 and more than `max`, in the same words). */
export function limitParam(max: number): { type: "string"; pattern: string; description: string } {
  return { type: "string", pattern: "^[0-9]{1,9}$", description: limitRule(max) };
}

/** A key, hex: at most `maxKeyBytes` bytes (two digits each, and an optional `0x`; hex.ts's parseHex checks the digits). */
export function keyParam(maxKeyBytes: number): { type: "string"; maxLength: number; description: string } {
  return { type: "string", maxLength: 2 * maxKeyBytes + 2, description: `hex of 1 to ${maxKeyBytes} bytes (digits 0-9 a-f, two a byte)` };
}

/** A bound of a range, hex: at most `maxKeyBytes` bytes; empty for none. */
export function boundParam(maxKeyBytes: number): { type: "string"; maxLength: number; description: string } {
  return { type: "string", maxLength: 2 * maxKeyBytes + 2, description: `hex of at most ${maxKeyBytes} bytes (digits 0-9 a-f, two a byte; empty for no bound)` };
}

/** How long a replica's request may wait for a version, ms (longer waits are cut to `maxWaitMs`). */
export function waitParam(maxWaitMs: number): { type: "string"; pattern: string; description: string } {
  return { type: "string", pattern: "^[0-9]{1,16}$", description: `a whole number of milliseconds (at most ${maxWaitMs} are waited)` };
}

/** A query string's schema: its parameters (each with its description) and those it requires. */
export function querystring<P extends Record<string, { description: string }>>(properties: P, required: ReadonlyArray<keyof P & string> = []): object {
  return { type: "object", properties, required };
}

/** A height given as decimal digits (or a number, as JSON-RPC may send it); NaN when it is not a safe integer ≥ 0. */
export function decimalHeight(h: unknown): number {
  const n = typeof h === "number" ? h : typeof h === "string" && /^[0-9]{1,16}$/.test(h) ? Number(h) : Number.NaN;
  return Number.isSafeInteger(n) && n >= 0 ? n : Number.NaN;
}

/** Bounds on the work of one request. */
export interface Limits {
  /** Longest key (and range bound) accepted, bytes. */
  maxKeyBytes: number;
  /** Most pairs in one range page. */
  maxRangeLimit: number;
  /** Key and value bytes after which a range page ends early (with `next` set). */
  rangeBytes: number;
  /** Time after which a range page ends early (with `next` set), ms. */
  rangeMs: number;
  /** Most versions one change stream may span. */
  maxChangesSpan: number;
}

/** What a key query found at one version. */
export interface KeyAnswer {
  height: number;
  key: Uint8Array;
  /** Undefined: absent at that height. */
  value: Uint8Array | undefined;
  storeHash: Uint8Array;
  /** Null for a plain store folder. */
  appHash: Uint8Array | null;
  /** With `prove`: the ICS23 proof of the key against `storeHash` (null when ICS23 cannot express it). */
  storeProof: CommitmentProof | null;
  /** With `prove`: the ICS23 proof of the store's hash against `appHash` (null for a plain store folder). */
  appProof: CommitmentProof | null;
  /** Why `storeProof` is null although asked for: `EMPTY_VALUE_PROOF` or `EMPTY_TREE`. */
  proofError?: string;
}

/** The store a request names: required on a multi-store folder, optional on a plain one. */
export function pickStore(f: Follower, name: string | undefined): string {
  const names = f.reader.names;
  if (name === undefined) {
    if (!f.reader.multi && names.length === 1) return names[0]!;
    throw new IavlError("INVALID_ARGUMENT", `store is required: one of ${names.join(", ")}`);
  }
  if (!names.includes(name)) throw new ApiError(404, "STORE_NOT_FOUND", `no store named ${name} (stores: ${names.join(", ")})`);
  return name;
}

/** The value of `key` in `store` at `height` (default: the latest), with both proofs when `prove`. */
export function queryKey(f: Follower, store: string, key: Uint8Array, height: number | undefined, prove: boolean): KeyAnswer {
  if (key.length === 0) throw new IavlError("INVALID_ARGUMENT", "key must not be empty");
  const v = f.resolve(height);
  const view = f.reader.at(store, v);
  const value = view.get(key);
  const answer: KeyAnswer = { height: v, key, value, storeHash: view.hash, appHash: f.reader.appHashAt(v), storeProof: null, appProof: null };
  if (!prove) return answer;
  try {
    answer.storeProof = view.proof(key);
  } catch (e) {
    if (!isIavlError(e, "EMPTY_VALUE_PROOF") && !isIavlError(e, "EMPTY_TREE")) throw e;
    answer.proofError = e.code;
  }
  if (f.reader.multi) {
    answer.appProof = f.reader.appProof(v, store);
    // Both proofs must meet at the store's hash; they can only differ when a rollback replaced the version meanwhile.
    const proven = answer.appProof.exist?.value;
    if (!(proven instanceof Uint8Array) || !equalBytes(proven, answer.storeHash)) {
      throw new IavlError("VERSION_ROLLED_BACK", `version ${v} of store ${store} changed while it was read`);
    }
  }
  return answer;
}

/** Options of a range page. */
export interface RangeRequest {
  start?: Uint8Array;
  end?: Uint8Array;
  height?: number;
  limit: number;
  reverse: boolean;
}

/** One page of a range. */
export interface RangePage {
  height: number;
  pairs: Array<[Uint8Array, Uint8Array]>;
  /** Pass as `start` (as `end` when reversing) for the next page; undefined at the end. */
  next: Uint8Array | undefined;
}

/** Throws `INVALID_ARGUMENT` unless `limit` is a page size the service allows. */
function checkLimit(limit: number, limits: Limits): void {
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > limits.maxRangeLimit) {
    throw new IavlError("INVALID_ARGUMENT", `limit must be ${limitRule(limits.maxRangeLimit)}, got ${limit}`);
  }
}

/**
 * A page of the keys of `store` in [start, end) at `height`: ascending, or descending with `reverse`. The page ends
 * at `limit` pairs, or earlier when it reached the byte or time budget of `limits`; `next` tells where to go on.
 */
export function queryRange(f: Follower, store: string, r: RangeRequest, limits: Limits): RangePage {
  checkLimit(r.limit, limits);
  const v = f.resolve(r.height);
  const view = f.reader.at(store, v);
  const pairs: Array<[Uint8Array, Uint8Array]> = [];
  const deadline = performance.now() + limits.rangeMs;
  let bytes = 0;
  let next: Uint8Array | undefined;
  // for…of closes the iterator on break and on a throw.
  for (const pair of view.iterate({ start: r.start, end: r.end, reverse: r.reverse })) {
    const full = pairs.length >= r.limit || (pairs.length > 0 && (bytes >= limits.rangeBytes || performance.now() > deadline));
    if (full) {
      // There is more: ascending, the next page starts at this key (start is inclusive); descending, it ends
      // below the last key returned (end is exclusive).
      next = r.reverse ? pairs[pairs.length - 1]![0] : pair[0];
      break;
    }
    pairs.push(pair);
    bytes += pair[0].length + pair[1].length;
  }
  return { height: v, pairs, next };
}

/** What a history request asks. */
export interface HistoryRequest {
  key: Uint8Array;
  from?: number | undefined;
  /** The last version searched; default the latest every store holds. */
  to?: number | undefined;
  limit: number;
  reverse: boolean;
}

/**
 * A page of the versions where `key` changed in `store` (see `Tree.history`), up to a version every store holds
 * whole; each entry can be proven at its version with `/v1/query`.
 */
export function queryHistory(f: Follower, store: string, r: HistoryRequest, limits: Limits): KeyHistory {
  checkLimit(r.limit, limits);
  const to = f.resolve(r.to);
  return f.reader.store(store).history(r.key, { from: r.from, to, limit: r.limit, reverse: r.reverse });
}

/** A height (or version, named `what`) from the query string: a positive safe integer, or undefined. */
export function parseHeight(text: string | undefined, what = "height"): number | undefined {
  if (text === undefined) return undefined;
  const n = decimalHeight(text);
  if (!(n >= 1)) throw new IavlError("INVALID_ARGUMENT", `${what} must be ${HEIGHT_RULE}, got "${text.slice(0, 24)}"`);
  return n;
}
