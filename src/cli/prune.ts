/**
 * `iavlite prune <dir> --keep-recent N`: remove old versions and report the space reclaimed. On a multi-store folder
 * every store is pruned to the same version (`MultiTree.prune`), or only those `--store` names, each on its own.
 * @module
 */
import type { Command } from "commander";
import { action, eachStore, folderOf } from "./command.js";
import { humanBytes, globals, intArg, out, outJson, withProgress } from "./format.js";
import { storeFileIn } from "../sqlite/connection.js";
import type { PruneResult } from "../prune/pruner.js";
import { MultiTree } from "../api/multi-tree.js";
import { Tree } from "../api/tree.js";
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

/** Prunes one store (a plain store folder, or a store of a folder that --store named). */
async function pruneStore(path: string, opts: PruneCliOptions, cmd: Command): Promise<number> {
  storeFileIn(path);
  // Refused with LOCKED, naming the holder, while another process writes the store (or the folder, below).
  return closing(Tree.open(path), async (tree) => {
    const versions = tree.versions();
    const latest = tree.version;
    const target = latest - opts.keepRecent;
    const first = versions[0];
    const result =
      first !== undefined && target >= first
        ? await withProgress("prune", 0, (bar) =>
            tree.prune(target, { keepEvery: opts.keepEvery, onProgress: (done, total, phase) => bar.update(done, total, `prune: ${phase}`) }),
          )
        : nothingPruned(first ?? latest);
    if (globals(cmd).json) outJson({ target, latest, ...result });
    else if (result.pruned === 0) out(`nothing to prune: ${versions.length} version(s) kept, ${opts.keepRecent} asked`);
    else {
      out(`pruned ${result.pruned} version(s) up to ${target}; kept versions ${result.keptFrom} … ${latest}`);
      out(`reclaimed ${humanBytes(result.reclaimedBytes)} (${result.reclaimedBytes} bytes); ${result.droppedShards} shard(s) dropped whole`);
    }
    return 0;
  });
}

/** Prunes every store of a multi-store folder to one version, so that they keep the same versions. */
async function pruneFolder(dir: string, stores: string[], opts: PruneCliOptions, cmd: Command): Promise<number> {
  return closing(MultiTree.open(dir, { stores }), async (multi) => {
    const latest = multi.version;
    const target = latest - opts.keepRecent;
    const first = Math.min(...stores.map((n) => multi.tree(n).versions()[0] ?? latest));
    const results =
      latest > 0 && target >= first
        ? await withProgress("prune", 0, (bar) =>
            multi.prune(target, { keepEvery: opts.keepEvery, onProgress: (done, total, phase) => bar.update(done, total, `prune ${phase}`) }),
          )
        : new Map<string, PruneResult>();
    const each = stores.map((name) => {
      const kept = multi.tree(name).versions();
      return { name, ...(results.get(name) ?? nothingPruned(kept[0] ?? latest)), kept };
    });
    if (globals(cmd).json) outJson({ target, latest, stores: each });
    else if (each.every((s) => s.pruned === 0)) out(`nothing to prune: ${opts.keepRecent} version(s) asked of ${stores.length} stores`);
    else {
      for (const s of each) {
        // Snapshots kept by --keep-every are older than keptFrom.
        const snapshots = s.kept.filter((v) => v < s.keptFrom).map((v) => `${v}, `).join("");
        out(`${s.name}: pruned ${s.pruned} version(s) up to ${target}; kept ${snapshots}${s.keptFrom} … ${latest}; reclaimed ${humanBytes(s.reclaimedBytes)}`);
      }
    }
    return 0;
  });
}
