/**
 * `iavlite history <dir> <key>`: the versions where a key was set or removed, newest first, from one range of the
 * store's `(key, version)` index; on a multi-store folder, in every store asked for, up to the version all hold whole.
 * @module
 */
import type { Command } from "commander";
import { IavlError } from "../base/errors.js";
import type { HistoryEntry, HistoryOptions, KeyHistory } from "../tree/store-contract.js";
import { action, folderOf } from "./command.js";
import { bytesJson, bytesMode, bytesText, globals, intArg, out, parseBytes, UsageError, versionArg, type BytesMode } from "./format.js";
import { checkWhole, withFolderReader, withReader } from "./store.js";

interface HistoryCliOptions {
  from?: number;
  to?: number;
  limit?: number;
  reverse?: boolean;
}

/** Entries read a page at a time: a history of millions of changes is printed in bounded memory. */
const PAGE = 1_000;

/** Adds the `history` command to `program`. */
export function registerHistory(program: Command): void {
  program
    .command("history")
    .description(
      "print the versions where a key was set (with its value) or removed, newest first (with --json, one object per line); " +
        "from the oldest version whose changes are kept, unless --from says later",
    )
    .argument("<dir>", "store folder, or multi-store folder (every store, unless --store names some; JSON lines carry \"store\")")
    .argument("<key>", "the key (UTF-8, or hex with --hex)")
    .option("--from <A>", "first version searched", versionArg)
    .option("--to <B>", "last version searched (default: the latest; on a multi-store folder, the latest every store holds)", versionArg)
    .option("--limit <N>", "print at most N entries", intArg(1))
    .option("--reverse", "oldest first")
    .action(action({ folder: "folder", takes: ["json", "hex", "utf8", "store"] }, (dir: string, keyText: string, opts: HistoryCliOptions, cmd: Command) => history(dir, keyText, opts, cmd)));
}

async function history(dir: string, keyText: string, opts: HistoryCliOptions, cmd: Command): Promise<number> {
  const g = globals(cmd);
  const key = parseBytes(keyText, g, "the key");
  const mode = bytesMode(g);
  if (opts.from !== undefined && opts.to !== undefined && opts.from > opts.to) throw new UsageError(`--from ${opts.from} is after --to ${opts.to}`);
  const folder = folderOf(dir, cmd);
  if (folder === undefined) return withReader(dir, (h) => print(undefined, pages((o) => h.history(key, o), opts), g.json, mode));
  return withFolderReader(dir, (r) => {
    const to = opts.to ?? r.latest;
    if (to === 0) throw new IavlError("VERSION_NOT_FOUND", `${dir} has no version that every store committed yet`);
    checkWhole(r, dir, to);
    // Every store's first page before anything is printed: a store that cannot answer stops the command whole.
    const stores = folder.chosen.map((name) => ({ name, entries: pages((o) => r.store(name).history(key, o), { ...opts, to }) }));
    for (const s of stores) {
      if (stores.length > 1 && !g.json) out(`── store ${s.name}`);
      print(s.name, s.entries, g.json, mode);
    }
    return 0;
  });
}

/** The entries `opts` asks for, a page at a time; the first page is read at once, so that its errors come first. */
function pages(read: (o: HistoryOptions) => KeyHistory, opts: HistoryCliOptions): Iterable<HistoryEntry> {
  const reverse = opts.reverse === true;
  const limit = opts.limit ?? Number.POSITIVE_INFINITY;
  const ask = (from: number | undefined, to: number | undefined): KeyHistory => read({ from, to, reverse, limit: Math.min(PAGE, limit) });
  const first = ask(opts.from, opts.to);
  return {
    *[Symbol.iterator]() {
      let printed = 0;
      for (let page = first; ; page = reverse ? ask(page.next, page.to) : ask(page.from, page.next)) {
        for (const e of page.entries) {
          if (printed++ >= limit) return;
          yield e;
        }
        if (page.next === undefined) return;
      }
    },
  };
}

/** Prints the entries, as text or one JSON object per line (with the store's name on a multi-store folder). */
function print(store: string | undefined, entries: Iterable<HistoryEntry>, json: boolean, mode: BytesMode): number {
  const named = store === undefined ? {} : { store };
  for (const e of entries) {
    if (json) out(JSON.stringify({ ...named, version: e.version, ...(e.value === null ? { value: null } : bytesJson("value", e.value, mode)) }));
    else out(e.value === null ? `${e.version}  removed` : `${e.version}  set      ${bytesText(e.value, mode)}`);
  }
  return 0;
}
