/**
 * `iavlite prune <dir> --keep-recent N`: remove old versions and report the space reclaimed.
 * @module
 */
import type { Command } from "commander";
import { humanBytes, action, globals, intArg, out, outJson, progress } from "./format.js";
import { storeFileIn } from "../sqlite/connection.js";
import { Tree } from "../api/tree.js";

interface PruneCliOptions {
  keepRecent: number;
  keepEvery?: number;
}

/** Adds the `prune` command to `program`. */
export function registerPrune(program: Command): void {
  program
    .command("prune")
    .description("remove every version older than the N most recent (the latest is always kept); needs the writer lock")
    .argument("<dir>", "store folder")
    .requiredOption("--keep-recent <N>", "keep the N most recent versions", intArg(1))
    .option("--keep-every <M>", "also keep every version that is a multiple of M and was committed as a checkpoint", intArg(1))
    .action(action((dir: string, opts: PruneCliOptions, cmd: Command) => prune(dir, opts, cmd)));
}

async function prune(dir: string, opts: PruneCliOptions, cmd: Command): Promise<number> {
  const g = globals(cmd);
  storeFileIn(dir);
  // Refused with LOCKED, naming the holder, while another process writes the store.
  const tree = Tree.open(dir);
  try {
    const versions = tree.versions();
    const latest = tree.version;
    const target = latest - opts.keepRecent;
    const first = versions[0];
    let result = { pruned: 0, keptFrom: first ?? latest, reclaimedBytes: 0, droppedShards: 0 };
    if (first !== undefined && target >= first) {
      const bar = progress("prune", 0);
      try {
        result = await tree.prune(target, {
          keepEvery: opts.keepEvery,
          onProgress: (done, total, phase) => bar.update(done, total, `prune: ${phase}`),
        });
      } finally {
        bar.stop();
      }
    }
    if (g.json) outJson({ target, latest, ...result });
    else if (result.pruned === 0) out(`nothing to prune: ${versions.length} version(s) kept, ${opts.keepRecent} asked`);
    else {
      out(`pruned ${result.pruned} version(s) up to ${target}; kept versions ${result.keptFrom} … ${latest}`);
      out(`reclaimed ${humanBytes(result.reclaimedBytes)} (${result.reclaimedBytes} bytes); ${result.droppedShards} shard(s) dropped whole`);
    }
    return 0;
  } finally {
    tree.close();
  }
}
