/**
 * `iavlite rollback <dir> --to V`: delete every version after V, after showing what would go.
 * @module
 */
import type { Command } from "commander";
import { IavlError, isIavlError } from "../base/errors.js";
import { toHex } from "../base/bytes.js";
import { Tree } from "../api/tree.js";
import { action, globals, note, out, outJson, versionArg } from "./format.js";
import { withReader } from "./store.js";

interface RollbackOptions {
  to: number;
  yes?: boolean;
}

/** Adds the `rollback` command to `program`. */
export function registerRollback(program: Command): void {
  program
    .command("rollback")
    .description("delete every version after V (without --yes, only show what would be deleted and exit with 1)")
    .argument("<dir>", "store folder")
    .requiredOption("--to <V>", "the version to keep as the latest", versionArg)
    .option("--yes", "really delete")
    .action(action((dir: string, opts: RollbackOptions, cmd: Command) => rollback(dir, opts, cmd)));
}

async function rollback(dir: string, opts: RollbackOptions, cmd: Command): Promise<number> {
  const g = globals(cmd);
  const { hash, doomed } = await withReader(dir, (h) => {
    try {
      return { hash: h.at(opts.to).hash, doomed: h.versions().filter((v) => v > opts.to) };
    } catch (e) {
      if (isIavlError(e, "VERSION_PRUNED") || isIavlError(e, "VERSION_NOT_FOUND")) {
        throw new IavlError(e.code, `cannot roll back to version ${opts.to}: ${e.message}`);
      }
      throw e;
    }
  });
  const span = doomed.length === 0 ? "" : `${doomed[0]} … ${doomed[doomed.length - 1]}`;
  const result = { to: opts.to, hash: toHex(hash), deleted: doomed.length, from: doomed[0] ?? null, through: doomed[doomed.length - 1] ?? null };
  if (doomed.length === 0) {
    if (g.json) outJson({ ...result, done: true });
    else out(`nothing to roll back: ${opts.to} is the latest version`);
    return 0;
  }
  if (opts.yes !== true) {
    if (g.json) outJson({ ...result, done: false });
    else out(`would delete ${doomed.length} version(s), ${span}, leaving version ${opts.to} (root ${result.hash}) as the latest`);
    note("nothing deleted: run again with --yes to delete them");
    return 1;
  }
  // Refused with LOCKED, naming the holder, while another process writes the store.
  Tree.rollback(dir, opts.to);
  if (g.json) outJson({ ...result, done: true });
  else out(`rolled back to version ${opts.to} (root ${result.hash}): deleted ${doomed.length} version(s), ${span}`);
  return 0;
}
