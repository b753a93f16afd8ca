/**
 * Argument checks at the public boundary: they throw before anything changes.
 * @module
 */
import { IavlError } from "./errors.js";

/** Throws unless `key` is a non-empty Uint8Array. */
export function checkKey(key: unknown, what = "key"): asserts key is Uint8Array {
  if (!(key instanceof Uint8Array)) throw new IavlError("INVALID_ARGUMENT", `${what} must be a Uint8Array, got ${describe(key)}`);
  if (key.length === 0) throw new IavlError("EMPTY_KEY", `${what} must not be empty`);
}

/** Throws unless `value` is a Uint8Array (empty is allowed). */
export function checkValue(value: unknown): asserts value is Uint8Array {
  if (!(value instanceof Uint8Array)) throw new IavlError("INVALID_ARGUMENT", `value must be a Uint8Array, got ${describe(value)}`);
}

/** Throws unless `bound` is undefined or a Uint8Array. */
export function checkBound(bound: unknown, what: string): asserts bound is Uint8Array | undefined {
  if (bound !== undefined && !(bound instanceof Uint8Array)) {
    throw new IavlError("INVALID_ARGUMENT", `${what} must be a Uint8Array or undefined, got ${describe(bound)}`);
  }
}

/** Throws unless `v` is a positive safe integer. */
export function checkVersion(v: unknown): asserts v is number {
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1) {
    throw new IavlError("INVALID_ARGUMENT", `version must be a positive integer, got ${describe(v)}`);
  }
}

function describe(x: unknown): string {
  if (x === null) return "null";
  if (typeof x === "object") return x.constructor?.name ?? "object";
  return typeof x === "string" ? `string "${x.slice(0, 20)}"` : `${typeof x} ${String(x)}`;
}
