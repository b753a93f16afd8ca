/**
 * `iavlite changes <dir> --from A --to B`: what each version changed, from what the store logs, in every store asked
 * for. As `GET /v1/changes` does, everything that can be wrong is found before the first line; only a prune or
 * rollback by a writer while the lines go out can still stop it part-way.
 * @module
 */
import type { Command } from "commander";
import { action, folderOf } from "./command.js";
import { bytesJson, bytesMode, bytesText, globals, out, UsageError, versionArg, type BytesMode } from "./format.js";
import { checkWhole, withFolderReader, withReader, type ReadHandle } from "./store.js";
import type { VersionChange } from "../tree/store-contract.js";

interface ChangesCliOptions {
  from: number;
  to: number;
}

/** What the span checks need of a store. */
type ChangeSource = Pick<ReadHandle, "at" | "versions" | "changes">;

/** Adds the `changes` command to `program`. */
export function registerChanges(program: Command): void {
  program
    .command("changes")
    .description(
      "print the net changes of each version from A to B, in key order (with --json, one object per line); the span is " +
        "checked in every store before anything is printed",
    )
    .argument("<dir>", "store folder, or multi-store folder (every store, unless --store names some; JSON lines carry \"store\")")
    .requiredOption("--from <A>", "first version", versionArg)
    .requiredOption("--to <B>", "last version", versionArg)
    .action(action({ folder: "folder", takes: ["json", "hex", "utf8", "store"] }, (dir: string, opts: ChangesCliOptions, cmd: Command) => changes(dir, opts, cmd)));
}

async function changes(dir: string, opts: ChangesCliOptions, cmd: Command): Promise<number> {
  const g = globals(cmd);
  const mode = bytesMode(g);
  if (opts.from > opts.to) throw new UsageError(`--from ${opts.from} is after --to ${opts.to}`);
  const folder = folderOf(dir, cmd);
  if (folder === undefined) {
    return withReader(dir, (h) => {
      print(undefined, checked(h, opts), g.json, mode);
      return 0;
    });
  }
  return withFolderReader(dir, (r) => {
    checkWhole(r, dir, opts.to);
    // Every store's span first: nothing is printed unless all of them can be.
    const streams = folder.chosen.map((name) => {
      const store = r.store(name);
      const source: ChangeSource = { at: (v) => r.at(name, v), versions: () => store.versions(), changes: (a, b) => store.changes(a, b) };
      return { name, lines: checked(source, opts) };
    });
    for (const s of streams) {
      if (streams.length > 1 && !g.json) out(`── store ${s.name}`);
      print(s.name, s.lines, g.json, mode);
    }
    return 0;
  });
}

/** The changes of [from, to] in `h`, after checking `to`, each version kept and the first read (an imported version fails it). */
function checked(h: ChangeSource, opts: ChangesCliOptions): Iterable<VersionChange> {
  h.at(opts.to);
  const kept = new Set(h.versions());
  // at() of a version not kept throws the store's own VERSION_PRUNED (or NOT_FOUND) with its message.
  for (let v = opts.from; v <= opts.to; v++) if (!kept.has(v)) h.at(v);
  const it = h.changes(opts.from, opts.to)[Symbol.iterator]();
  const first = it.next();
  return {
    *[Symbol.iterator]() {
      if (first.done === true) return;
      yield first.value;
      for (let r = it.next(); r.done !== true; r = it.next()) yield r.value;
    },
  };
}

/** Prints the changes, as text or one JSON object per line (with the store's name on a multi-store folder). */
function print(store: string | undefined, lines: Iterable<VersionChange>, json: boolean, mode: BytesMode): void {
  const named = store === undefined ? {} : { store };
  for (const c of lines) {
    if (json) {
      const value = c.value === null ? { value: null } : bytesJson("value", c.value, mode);
      out(JSON.stringify({ ...named, version: c.version, ...bytesJson("key", c.key, mode), ...value }));
    } else if (c.value === null) out(`${c.version}  removed  ${bytesText(c.key, mode)}`);
    else out(`${c.version}  set      ${bytesText(c.key, mode)} = ${bytesText(c.value, mode)}`);
  }
}
