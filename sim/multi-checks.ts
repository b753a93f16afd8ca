/**
 * Checks the multi-store simulator makes of one store's view, and the CLI run as an operator would, in a child.
 * @module
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { iavlSpec, verifyMembership } from "@confio/ics23";
import { fromHex, IavlError, toHex, type ReadonlyTree } from "../src/index.js";
import { KEYS, keyBytes, keyHex, type Rec } from "./model.js";
import type { Random } from "./random.js";
import { cliCommand } from "./child-command.js";

/** Codes a read of a version that is gone may throw (never data of another history). */
export const GONE: readonly string[] = ["VERSION_PRUNED", "VERSION_ROLLED_BACK"];

export function codeOf(e: unknown): string | undefined {
  return e instanceof IavlError ? e.code : undefined;
}

/** What `fn` throws, or undefined. */
export function catching(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  return undefined;
}

export function eq(a: Uint8Array | null | undefined, b: Uint8Array | null | undefined): boolean {
  if (a == null || b == null) return a == b;
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

export function show(v: Uint8Array | null | undefined): string {
  return v == null ? String(v) : v.length > 12 ? `${toHex(v.subarray(0, 12))}…(${v.length})` : toHex(v);
}

/**
 * What is wrong with `view` as a read of `rec` (hash, size, sampled gets, the whole iteration, one proof), or
 * undefined. Store errors are thrown to the caller, which knows which codes the version's state allows.
 */
export function viewProblem(view: ReadonlyTree, rec: Rec, r: Random): string | undefined {
  const hash = toHex(view.hash);
  if (hash !== rec.hash) return `hash ${hash}, expected ${rec.hash}`;
  if (view.size !== rec.content.size) return `size ${view.size}, expected ${rec.content.size}`;
  for (let i = 0; i < 3; i++) {
    const k = r.int(0, KEYS - 1);
    const got = view.get(keyBytes(k));
    const want = rec.content.get(keyHex(k));
    if (!eq(got, want)) return `get(${keyHex(k)}) gave ${show(got)}, expected ${show(want)}`;
  }
  const want = [...rec.content].sort((a, b) => (a[0] < b[0] ? -1 : 1));
  const reverse = r.chance(0.3);
  if (reverse) want.reverse();
  let i = 0;
  for (const [k, v] of view.iterate({ reverse })) {
    const w = want[i++];
    if (w === undefined || toHex(k) !== w[0] || !eq(v, w[1])) return `iteration item ${i - 1} is ${toHex(k)}=${show(v)}, expected ${w?.[0]}=${show(w?.[1])}`;
  }
  if (i !== want.length) return `iteration ended after ${i} of ${want.length} keys`;
  const present = want.filter(([, v]) => v.length > 0);
  if (present.length > 0) {
    const [k, v] = r.pick(present);
    if (!verifyMembership(view.proof(fromHex(k)), iavlSpec, fromHex(rec.hash), fromHex(k), v)) return `the proof of ${k} does not verify`;
  }
  return undefined;
}

const root = join(fileURLToPath(new URL(".", import.meta.url)), "..");

/** What one `iavlite` command gave: its exit status, stdout parsed as one JSON value (undefined if it is not), stderr. */
export interface CliResult {
  status: number | null;
  json: unknown;
  stdout: string;
  stderr: string;
}

/** Runs `iavlite <args>` as an operator would, in a child process. */
export function cli(args: string[]): CliResult {
  const r = spawnSync(process.execPath, [...cliCommand(), ...args], { cwd: root, encoding: "utf8" });
  let json: unknown;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    json = undefined;
  }
  return { status: r.status, json, stdout: r.stdout, stderr: r.stderr };
}

/** The error code of a `--json` failure value (`{ error: { code } }`). */
export function cliErrorCode(json: unknown): string | undefined {
  if (typeof json !== "object" || json === null || !("error" in json)) return undefined;
  const e = json.error;
  return typeof e === "object" && e !== null && "code" in e && typeof e.code === "string" ? e.code : undefined;
}
