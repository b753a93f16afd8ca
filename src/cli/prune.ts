/**
 * `iavlite prune <dir> --keep-recent N`: remove old versions and report the space reclaimed. On a multi-store folder
 * every store is pruned to the same version (`MultiTree.prune`), or only those `--store` names, each on its own.
 *
 * The space reclaimed is what the store's folder lost from before the store was opened to after it was closed, which
 * is what `du` tells after the command: until the close, the WAL holds the prune's writes (up to 64 MiB), and only
 * the close's checkpoint removes it.
 * @module
 */
import type { Command } from "commander";
import { action, eachStore, folderOf } from "./command.js";
import { humanBytes, globals, intArg, out, outJson, withProgress } from "./format.js";
import { storeFileIn } from "../sqlite/connection.js";
import type { PruneResult } from "../prune/pruner.js";
import { storeDir } from "../api/multi-folder.js";
import { MultiTree } from "../api/multi-tree.js";
import { Tree } from "../api/tree.js";
import { folderBytes } from "./folder-bytes.js";
import { closing } from "./store.js";

interface PruneCliOptions {
  keepRecent: number;
  keepEvery?: number;
}

/** Adds the `prune` command to `program`. */
export function registerPrune(program: Command): void {
  program
    .command("prune")
    .description("remove every version older than the N most recent (the latest is always kept); needs the writer lock")
    .argument("<dir>", "store folder, or multi-store folder (every store to one version, unless --store names some)")
    .requiredOption("--keep-recent <N>", "keep the N most recent versions", intArg(1))
    .option("--keep-every <M>", "also keep every version that is a multiple of M and was committed as a checkpoint", intArg(1))
    .action(action({ folder: "folder", takes: ["json", "store"] }, (dir: string, opts: PruneCliOptions, cmd: Command) => prune(dir, opts, cmd)));
}

async function prune(dir: string, opts: PruneCliOptions, cmd: Command): Promise<number> {
  const folder = folderOf(dir, cmd);
  if (folder === undefined) return pruneStore(dir, opts, cmd);
  if (!folder.narrowed) return pruneFolder(dir, folder.stores, opts, cmd);
  return eachStore(folder, globals(cmd).json, (path) => pruneStore(path, opts, cmd));
}

/** What a store that had nothing to prune reports. */
function nothingPruned(keptFrom: number): PruneResult {
  return { pruned: 0, keptFrom, reclaimedBytes: 0, droppedShards: 0 };
}

/**
 * The version a prune to `target` runs to, given the first kept version `first`: `target`; or, with no version left
 * to remove, the one before the first kept, since a store pruned before still runs the prune (one cut short by a kill
 * or a full disk left rows only a prune removes); undefined when there is nothing to prune nor any earlier prune.
 */
function pruneTo(target: number, first: number | undefined): number | undefined {
  if (first === undefined) return undefined;
  if (target >= first) return target;
  return first > 1 ? first - 1 : undefined;
}

/** What a prune with no version to remove still reclaimed (`lost` bytes): what earlier prunes left, if anything. */
function leftovers(lost: number): string {
  return lost > 0 ? `; ${reclaimed(lost)} that earlier prunes left (rows of one cut short, free pages)` : "";
}

/** `lost`: the folder's bytes before the store was opened less its bytes now, after the close. */
function reclaimed(lost: number): string {
  return lost >= 0 ? `reclaimed ${humanBytes(lost)} (${lost} bytes)` : `the files grew by ${humanBytes(-lost)} (${-lost} bytes)`;
}

/** Prunes one store (a plain store folder, or a store of a folder that --store named). */
async function pruneStore(path: string, opts: PruneCliOptions, cmd: Command): Promise<number> {
  storeFileIn(path);
  const before = folderBytes(path);
  // Refused with LOCKED, naming the holder, while another process writes the store (or the folder, below).
  const { versions, latest, target, result } = await closing(Tree.open(path), async (tree) => {
    const versions = tree.versions();
    const latest = tree.version;
    const target = latest - opts.keepRecent;
    const to = pruneTo(target, versions[0]);
    const result =
      to !== undefined
        ? await withProgress("prune", 0, (bar) =>
            tree.prune(to, {
              keepEvery: opts.keepEvery,
              onProgress: (done, total, phase) => bar.update(done, total, `prune: ${phase}`),
            }),
          )
        : nothingPruned(versions[0] ?? latest);
    return { versions, latest, target, result };
  });
  // Measured after the close: the prune's last checkpoint and the WAL's removal are done.
  const lost = before - folderBytes(path);
  if (globals(cmd).json) outJson({ target, latest, ...result, reclaimedBytes: lost });
  else if (result.pruned === 0) out(`nothing to prune: ${versions.length} version(s) kept, ${opts.keepRecent} asked${leftovers(lost)}`);
  else {
    out(`pruned ${result.pruned} version(s) up to ${target}; kept versions ${result.keptFrom} … ${latest}`);
    out(`${reclaimed(lost)}; ${result.droppedShards} shard(s) dropped whole`);
  }
  return 0;
}

/** Prunes every store of a multi-store folder to one version, so that they keep the same versions. */
async function pruneFolder(dir: string, stores: string[], opts: PruneCliOptions, cmd: Command): Promise<number> {
  const before = new Map(stores.map((name) => [name, folderBytes(storeDir(dir, name))]));
  const { latest, target, each } = await closing(MultiTree.open(dir, { stores }), async (multi) => {
    const latest = multi.version;
    const target = latest - opts.keepRecent;
    const first = Math.min(...stores.map((n) => multi.tree(n).versions()[0] ?? latest));
    const to = latest > 0 ? pruneTo(target, first) : undefined;
    const results =
      to !== undefined
        ? await withProgress("prune", 0, (bar) =>
            multi.prune(to, {
              keepEvery: opts.keepEvery,
              onProgress: (done, total, phase) => bar.update(done, total, `prune ${phase}`),
            }),
          )
        : new Map<string, PruneResult>();
    const each = stores.map((name) => {
      const kept = multi.tree(name).versions();
      return { name, ...(results.get(name) ?? nothingPruned(kept[0] ?? latest)), kept };
    });
    return { latest, target, each };
  });
  // Measured after the close, store by store, as for one store.
  const lost = (name: string): number => before.get(name)! - folderBytes(storeDir(dir, name));
  if (globals(cmd).json) outJson({ target, latest, stores: each.map((s) => ({ ...s, reclaimedBytes: lost(s.name) })) });
  else if (each.every((s) => s.pruned === 0)) {
    out(`nothing to prune: ${opts.keepRecent} version(s) asked of ${stores.length} stores${stores.map((n) => leftovers(lost(n))).join("")}`);
  } else {
    for (const s of each) {
      // Snapshots kept by --keep-every are older than keptFrom.
      const snapshots = s.kept.filter((v) => v < s.keptFrom).map((v) => `${v}, `).join("");
      out(`${s.name}: pruned ${s.pruned} version(s) up to ${target}; kept ${snapshots}${s.keptFrom} … ${latest}; ${reclaimed(lost(s.name))}`);
    }
  }
  return 0;
}
