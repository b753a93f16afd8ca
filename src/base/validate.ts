/**
 * Argument checks at the public boundary: they throw before anything changes.
 * @module
 */
import { IavlError } from "./errors.js";

/**
 * The longest key a tree takes: 64 KiB. cosmos/iavl has none, but real store keys are tens of bytes; it is what an
 * import (and so `verify`, which checks a version as an import would) and the service accept, so that `set` refuses
 * what they would refuse later.
 */
export const MAX_KEY_BYTES = 65_536;

/** The largest snapshot item: 64e6 bytes, the Cosmos SDK's `snapshotMaxItemSize`. */
export const MAX_ITEM_BYTES = 64_000_000;

/**
 * The longest value a tree takes: 63,934,432 bytes, so that a leaf with the longest key and this value still fits one
 * snapshot item (64e6 bytes, less 32 for the item's field tags, lengths and version), and every version `export`
 * writes, `import` reads back.
 */
export const MAX_VALUE_BYTES = MAX_ITEM_BYTES - MAX_KEY_BYTES - 32;

/** Throws unless `key` is a non-empty Uint8Array. */
export function checkKey(key: unknown, what = "key"): asserts key is Uint8Array {
  if (!(key instanceof Uint8Array)) throw new IavlError("INVALID_ARGUMENT", `${what} must be a Uint8Array, got ${describe(key)}`);
  if (key.length === 0) throw new IavlError("EMPTY_KEY", `${what} must not be empty`);
}

/** Throws unless `value` is a Uint8Array (empty is allowed). */
export function checkValue(value: unknown): asserts value is Uint8Array {
  if (!(value instanceof Uint8Array)) throw new IavlError("INVALID_ARGUMENT", `value must be a Uint8Array, got ${describe(value)}`);
}

/**
 * Throws unless `key` and `value` may be stored: a key as {@link checkKey} wants, of at most {@link MAX_KEY_BYTES},
 * and a value of at most {@link MAX_VALUE_BYTES}.
 */
export function checkEntry(key: unknown, value: unknown): asserts key is Uint8Array {
  checkKey(key);
  checkValue(value);
  if (key.length > MAX_KEY_BYTES) throw new IavlError("INVALID_ARGUMENT", `the key is ${key.length} bytes, more than the ${MAX_KEY_BYTES} a key may have`);
  if (value.length > MAX_VALUE_BYTES) throw new IavlError("INVALID_ARGUMENT", `the value is ${value.length} bytes, more than the ${MAX_VALUE_BYTES} a value may have`);
}

/** Throws unless `bound` is undefined or a Uint8Array. */
function checkBound(bound: unknown, what: string): asserts bound is Uint8Array | undefined {
  if (bound !== undefined && !(bound instanceof Uint8Array)) {
    throw new IavlError("INVALID_ARGUMENT", `${what} must be a Uint8Array or undefined, got ${describe(bound)}`);
  }
}

/** Throws unless `x` is a Uint8Array. */
export function checkBytes(x: unknown, what: string): asserts x is Uint8Array {
  if (!(x instanceof Uint8Array)) throw new IavlError("INVALID_ARGUMENT", `${what} must be a Uint8Array, got ${describe(x)}`);
}

/** Throws unless `x` is a non-empty string (a folder, a store name). */
export function checkString(x: unknown, what: string): asserts x is string {
  if (typeof x !== "string" || x.length === 0) throw new IavlError("INVALID_ARGUMENT", `${what} must be a non-empty string, got ${describe(x)}`);
}

/** Throws unless `x` is an object (an options bag), or undefined when `optional`. */
export function checkObject(x: unknown, what: string, optional = true): asserts x is object | undefined {
  if ((x === undefined && optional) || (typeof x === "object" && x !== null)) return;
  throw new IavlError("INVALID_ARGUMENT", `${what} must be an object${optional ? " or undefined" : ""}, got ${describe(x)}`);
}

/** Throws unless `x` is iterable (or, with `async`, async iterable too). */
export function checkIterable(x: unknown, what: string, async = false): void {
  const ok =
    typeof x === "object" && x !== null && (Symbol.iterator in x || (async && Symbol.asyncIterator in x));
  if (!ok) throw new IavlError("INVALID_ARGUMENT", `${what} must be ${async ? "an iterable or async iterable" : "iterable"}, got ${describe(x)}`);
}

/** Throws unless `opts` is undefined or the options of an iteration: optional Uint8Array bounds and a boolean. */
export function checkIterateOptions(opts: unknown): void {
  checkObject(opts, "the iteration options");
  if (opts === undefined) return;
  const o = opts as { start?: unknown; end?: unknown; reverse?: unknown };
  checkBound(o.start, "start");
  checkBound(o.end, "end");
  if (o.reverse !== undefined && typeof o.reverse !== "boolean") throw new IavlError("INVALID_ARGUMENT", `reverse must be a boolean, got ${describe(o.reverse)}`);
}

/** Throws unless `v` is a positive safe integer. */
export function checkVersion(v: unknown): asserts v is number {
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1) {
    throw new IavlError("INVALID_ARGUMENT", `version must be a positive integer, got ${describe(v)}`);
  }
}

/** A short description of a value of the wrong kind, for an error message. */
export function describe(x: unknown): string {
  if (x === null) return "null";
  if (typeof x === "object") return x.constructor?.name ?? "object";
  return typeof x === "string" ? `string "${x.slice(0, 20)}"` : `${typeof x} ${String(x)}`;
}
