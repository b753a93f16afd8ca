import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { IavlError } from "../src/base/errors.js";
import { fromHex, utf8 } from "../src/base/bytes.js";

const here = fileURLToPath(new URL(".", import.meta.url));

/** One version of `treehash_ops.jsonl`. */
export interface OpsVersion {
  version: number;
  ops: Array<["s", Uint8Array, Uint8Array] | ["d", Uint8Array]>;
  expectHash: string;
  sizeAfter: number;
}

/** The versions of cosmos/iavl `TestTreeHash`. */
export function treehashOps(): OpsVersion[] {
  return readFileSync(`${here}vectors/treehash_ops.jsonl`, "utf8")
    .trim()
    .split("\n")
    .map((line) => {
      const j = JSON.parse(line) as { version: number; ops: string[][]; expectHash: string; sizeAfter: number };
      return {
        version: j.version,
        expectHash: j.expectHash,
        sizeAfter: j.sizeAfter,
        ops: j.ops.map((op) =>
          op[0] === "s" ? (["s", fromHex(op[1]!), fromHex(op[2]!)] as const) : (["d", fromHex(op[1]!)] as const),
        ) as OpsVersion["ops"],
      };
    });
}

/** A golden case: named versions of UTF-8 ops with the expected root hash. */
export interface GoldenCase {
  name: string;
  versions: Array<{ version: number; ops: Array<[string, string, string?]>; rootHash: string }>;
}

export function goldenCases(): GoldenCase[] {
  return JSON.parse(readFileSync(`${here}vectors/golden_simple.json`, "utf8")) as GoldenCase[];
}

export function readVector<T>(name: string): T {
  return JSON.parse(readFileSync(`${here}vectors/${name}`, "utf8")) as T;
}

export const b = utf8;
export const hex = fromHex;

/** A small deterministic PRNG (mulberry32): seeded tests reproduce their failures. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `n` bytes from `next`. */
export function randomBytes(next: () => number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(next() * 256);
  return out;
}

/** The code of the IavlError `fn` throws, undefined when it throws nothing; other errors propagate. */
export function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof IavlError) return e.code;
    throw e;
  }
  return undefined;
}
