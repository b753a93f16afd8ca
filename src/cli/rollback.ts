/**
 * `iavlite rollback <dir> --to V`: delete every version after V, after showing what would go. On a multi-store
 * folder every store and the commit marker go back together (`MultiTree.rollback`); one store alone is refused,
 * since the folder would then no longer open.
 * @module
 */
import type { Command } from "commander";
import { IavlError, isIavlError } from "../base/errors.js";
import { toHex } from "../base/bytes.js";
import { MultiTree } from "../api/multi-tree.js";
import { planMultiRollback, type MultiRollback } from "../api/multi-rollback.js";
import { Tree } from "../api/tree.js";
import { action, folderOf, type Folder } from "./command.js";
import { globals, note, out, outJson, UsageError, versionArg } from "./format.js";
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
    .argument("<dir>", "store folder, or multi-store folder (every store and the commit marker together; --store is refused)")
    .requiredOption("--to <V>", "the version to keep as the latest", versionArg)
    .option("--yes", "really delete")
    .action(action({ folder: "folder", takes: ["json", "store"] }, (dir: string, opts: RollbackOptions, cmd: Command) => rollback(dir, opts, cmd)));
}

async function rollback(dir: string, opts: RollbackOptions, cmd: Command): Promise<number> {
  const folder = folderOf(dir, cmd);
  if (folder !== undefined) return rollbackFolder(dir, folder, opts, cmd);
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

/** Rolls back every store of a multi-store folder and its commit marker to `--to`. */
function rollbackFolder(dir: string, folder: Folder, opts: RollbackOptions, cmd: Command): number {
  if (folder.narrowed) {
    // A store behind the others and the marker makes MultiTree.open refuse the folder.
    throw new UsageError(
      `${dir} is a multi-store folder: rolling back ${folder.chosen.join(", ")} alone would leave it behind the other stores and ` +
        `the commit marker, and the folder would no longer open; roll back every store together with ` +
        `\`iavlite rollback ${dir} --to ${opts.to}${opts.yes === true ? " --yes" : ""}\` (without --store); nothing was changed`,
    );
  }
  const g = globals(cmd);
  // Checked and shown first; the rollback checks again under the stores' locks.
  const plan = planMultiRollback(dir, opts.to);
  const doomed = [...new Set(plan.stores.flatMap((s) => s.removed))].sort((a, b) => a - b);
  const span = doomed.length <= 1 ? String(doomed[0] ?? "") : `${doomed[0]} … ${doomed[doomed.length - 1]}`;
  const json = (p: MultiRollback, done: boolean): object => ({
    to: p.version,
    appHash: toHex(p.appHash),
    deleted: doomed.length,
    from: doomed[0] ?? null,
    through: doomed[doomed.length - 1] ?? null,
    stores: p.stores.map((s) => ({ name: s.name, hash: toHex(s.hash), deleted: s.removed.length })),
    done,
  });
  const each = plan.stores.map((s) => `${s.name} ${s.removed.length}`).join(", ");
  if (!plan.needed) {
    if (g.json) outJson(json(plan, true));
    else out(`nothing to roll back: ${opts.to} is the latest version of every store`);
    return 0;
  }
  if (opts.yes !== true) {
    if (g.json) outJson(json(plan, false));
    else if (doomed.length === 0) out(`no store holds a version after ${opts.to}, but the commit marker does: --yes sets it back to ${opts.to}`);
    else out(`would delete version(s) ${span} (${each}), leaving version ${opts.to} (app hash ${toHex(plan.appHash)}) as the latest`);
    note("nothing deleted: run again with --yes to roll back every store and the commit marker");
    return 1;
  }
  // Refused with LOCKED, naming the holder, while another process writes the folder.
  const done = MultiTree.rollback(dir, opts.to);
  if (g.json) outJson(json(done, true));
  else if (doomed.length === 0) out(`the folder is at version ${opts.to} (app hash ${toHex(done.appHash)}): no store held a later version`);
  else out(`rolled back every store to version ${opts.to} (app hash ${toHex(done.appHash)}): deleted version(s) ${span} (${each})`);
  return 0;
}
