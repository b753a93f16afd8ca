/**
 * Damage to a copy of a store, and the rule every read of it must keep: answer as the model says, or refuse with an
 * IavlError; never a wrong value, never SQLite's own error. Used by the simulator's "damage" step and by the
 * corruption probe (bench/corruption-probe.ts).
 * @module
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isIavlError, toHex, type ReadonlyTree } from "../src/index.js";

/** The files of a store folder that hold its data. */
export const DATA_FILES = ["iavl.sqlite", "iavl.sqlite-wal"] as const;

/** Copies the data files of store folder `from` into a new folder `to`. */
export function copyStore(from: string, to: string): void {
  mkdirSync(to, { recursive: true });
  for (const f of DATA_FILES) if (existsSync(join(from, f))) copyFileSync(join(from, f), join(to, f));
}

/** Damages `file` once, from `rnd`: 4 KiB of random bytes, or one byte flipped, at a random offset. Says where. */
export function damageFile(file: string, rnd: () => number, kind: "block" | "byte"): string {
  const bytes = readFileSync(file);
  if (kind === "block") {
    const at = Math.floor(rnd() * Math.max(1, bytes.length - 4096));
    for (let i = at; i < Math.min(bytes.length, at + 4096); i++) bytes[i] = Math.floor(rnd() * 256);
    writeFileSync(file, bytes);
    return `4 KiB at ${at}`;
  }
  const at = Math.floor(rnd() * bytes.length);
  bytes[at] ^= 1 + Math.floor(rnd() * 255);
  writeFileSync(file, bytes);
  return `byte ${at}`;
}

/** How a read of a damaged copy ended. */
export type Outcome = { outcome: "right" } | { outcome: "refused"; code: string } | { outcome: "wrong" | "raw"; note: string };

/** Runs a read and classifies how it ended; `check` returns what was wrong, if anything. */
export function tried(check: () => string | undefined): Outcome {
  try {
    const wrong = check();
    return wrong === undefined ? { outcome: "right" } : { outcome: "wrong", note: wrong };
  } catch (e) {
    return isIavlError(e) ? { outcome: "refused", code: e.code } : { outcome: "raw", note: `${(e as Error).name}: ${(e as Error).message}` };
  }
}

/** What a get of every key in `keys` (hex, present or not) gives wrong against `expected` (hex → value), if anything. */
export function wrongGet(view: Pick<ReadonlyTree, "get">, keys: Uint8Array[], expected: Map<string, Uint8Array>): string | undefined {
  for (const k of keys) {
    const got = view.get(k);
    const want = expected.get(toHex(k));
    if ((got === undefined ? undefined : toHex(got)) !== (want === undefined ? undefined : toHex(want))) {
      return `key ${toHex(k)}: got ${got === undefined ? "nothing" : toHex(got).slice(0, 16)}`;
    }
  }
  return undefined;
}

/** What a whole iteration gives wrong against `expected` (hex → value), if anything. */
export function wrongIteration(view: Pick<ReadonlyTree, "iterate">, expected: Map<string, Uint8Array>): string | undefined {
  const want = [...expected].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  let i = 0;
  for (const [k, v] of view.iterate()) {
    const w = want[i++];
    if (w === undefined || w[0] !== toHex(k) || toHex(w[1]) !== toHex(v)) return `pair ${i - 1}: ${toHex(k)}`;
  }
  return i === want.length ? undefined : `${i} pairs, not ${want.length}`;
}
