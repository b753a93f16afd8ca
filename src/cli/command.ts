/**
 * The one convention every command follows (program.ts states it in `--help`):
 *
 * - A global option a command does not use (`serve --json`, `info --hex`) is a usage error, not silently ignored.
 * - On a multi-store folder (as `npm start` makes) a command works on every store unless `--store` (repeatable)
 *   narrows it; a name the folder lacks is a usage error. On a plain store folder `--store` may only name the store
 *   itself (the folder's name, as `serve` calls it).
 * - With `--json`, stdout holds one value; on a multi-store folder it names each store, whether or not `--store`
 *   narrowed it: `{ …folder fields, stores: [{ name, …what the command gives for one store }] }`.
 * - Exit status 2 for a bad command line (UsageError, commander's errors), 1 for what the store refused or failed.
 * @module
 */
import type { Command } from "commander";
import { multiStoreNames, plainStoreName, storeDir } from "../api/multi-folder.js";
import { captureJson, capturedJson, globals, out, outJson, UsageError } from "./format.js";

/** Adds one command (its arguments, options, help and action) to the program. */
export type Registrar = (program: Command) => void;

/** A global option; each command lists those it uses. */
export type GlobalFlag = "json" | "hex" | "utf8" | "store";

/** How a command treats a multi-store folder given as its first argument. */
export type FolderUse =
  /** Runs on each chosen store in turn; with `--json` their values become one (see the module comment). */
  | "each"
  /** The command handles the folder itself: its stores together, and `--store` (see {@link folderOf}). */
  | "folder"
  /** The argument is not a store folder, or there is none. */
  | "none";

/** The fields a folder's combined value (and its text) carries beside the stores. */
export interface FolderHead {
  fields: Record<string, unknown>;
  lines: string[];
}

/** How a command runs (see {@link action}). */
export interface CommandSpec {
  folder: FolderUse;
  /** The global options the command uses; any other one given is refused. */
  takes: readonly GlobalFlag[];
  /** "each": the folder's own fields, read before the stores (the app hash for `info`). */
  head?: (dir: string) => FolderHead;
  /** "each": fields that depend on how the stores went (`ok` for `verify`), from the worst exit status. */
  tail?: (worst: number) => Record<string, unknown>;
}

/** A multi-store folder as a command sees it: every store, those it works on, and whether `--store` chose them. */
export interface Folder {
  dir: string;
  stores: string[];
  chosen: string[];
  narrowed: boolean;
}

let status = 0;
let jsonAsked = false;

/** Every `--store` given (the option accumulates; see program.ts). */
export function storesAsked(cmd: Command): string[] {
  return cmd.optsWithGlobals<{ store?: string[] }>().store ?? [];
}

/**
 * For a command that handles folders itself: `dir` as a multi-store folder with the stores `--store` chose (all when
 * none), or undefined for a plain store folder. A name the folder lacks is a usage error.
 */
export function folderOf(dir: string, cmd: Command): Folder | undefined {
  const asked = storesAsked(cmd);
  const stores = multiStoreNames(dir);
  if (stores === undefined) {
    // A plain store folder is one store named after the folder (as MultiTree.openReadOnly and serve name it).
    const self = plainStoreName(dir);
    const other = asked.find((n) => n !== self);
    if (other !== undefined) throw new UsageError(`${dir} is a single store (${self}), not a multi-store folder: it has no store ${other}; drop --store`);
    return undefined;
  }
  const unknown = asked.filter((n) => !stores.includes(n));
  if (unknown.length > 0) throw new UsageError(`${dir} has no store ${unknown.join(", ")} (stores: ${stores.join(", ")})`);
  const chosen = asked.length === 0 ? stores : stores.filter((n) => asked.includes(n));
  return { dir, stores, chosen, narrowed: asked.length > 0 };
}

/**
 * Wraps a command's action: refuses the global options it does not take, runs it on a multi-store folder as
 * `spec.folder` says, and keeps its result as the exit status ({@link lastStatus}), since commander's `parseAsync`
 * ignores what actions return.
 */
export function action<A extends unknown[]>(spec: CommandSpec, fn: (...args: A) => number | Promise<number>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    const cmd = args[args.length - 1] as Command;
    const g = globals(cmd);
    jsonAsked = g.json;
    refuseUnused(cmd, spec.takes);
    const dir = args[0];
    const folder = spec.folder === "each" && typeof dir === "string" ? folderOf(dir, cmd) : undefined;
    if (folder === undefined) {
      status = await fn(...args);
      return;
    }
    status = await eachStore(folder, g.json, (path) => fn(...([path, ...args.slice(1)] as A)), spec.head?.(folder.dir), spec.tail);
  };
}

/**
 * Runs `run` on each chosen store of `folder` (given the store's folder), headed by the store's name in text; with
 * `json`, the values it prints become one value naming each store, after `head`'s fields and `tail`'s (from the worst
 * exit status). Resolves to the worst exit status.
 */
export async function eachStore(
  folder: Folder,
  json: boolean,
  run: (path: string) => number | Promise<number>,
  head: FolderHead = { fields: {}, lines: [] },
  tail?: (worst: number) => Record<string, unknown>,
): Promise<number> {
  if (json) captureJson();
  else for (const l of head.lines) out(l);
  let worst = 0;
  try {
    for (const name of folder.chosen) {
      if (folder.chosen.length > 1 && !json) out(`── store ${name}`);
      worst = Math.max(worst, await run(storeDir(folder.dir, name)));
    }
  } finally {
    // A failure part-way prints no partial value: the error value stands alone (program.ts).
    const values = json ? capturedJson() : [];
    if (json && values.length === folder.chosen.length) {
      outJson({ ...head.fields, ...tail?.(worst), stores: folder.chosen.map((name, i) => ({ name, ...(values[i] as object) })) });
    }
  }
  return worst;
}

const FLAG: Record<GlobalFlag, string> = { json: "--json", hex: "--hex", utf8: "--utf8", store: "--store" };

/** Refuses a global option the command would ignore. */
function refuseUnused(cmd: Command, takes: readonly GlobalFlag[]): void {
  const o = cmd.optsWithGlobals<{ json?: boolean; hex?: boolean; utf8?: boolean; store?: string[] }>();
  const given: Record<GlobalFlag, boolean> = { json: o.json === true, hex: o.hex === true, utf8: o.utf8 === true, store: (o.store ?? []).length > 0 };
  const unused = (Object.keys(FLAG) as GlobalFlag[]).filter((f) => given[f] && !takes.includes(f));
  if (unused.length > 0) throw new UsageError(`${cmd.name()} does not take ${unused.map((f) => FLAG[f]).join(" or ")}`);
}

/** True when the command that ran (or failed) asked for JSON. */
export function jsonRequested(): boolean {
  return jsonAsked;
}

/** The exit status of the last action run. */
export function lastStatus(): number {
  return status;
}
