/**
 * `iavlite changes <dir> --from A --to B`: what each version changed, from what the store logs.
 * @module
 */
import type { Command } from "commander";
import { action, bytesJson, bytesMode, bytesText, globals, out, UsageError, versionArg } from "./format.js";
import { withReader } from "./store.js";

interface ChangesCliOptions {
  from: number;
  to: number;
}

/** Adds the `changes` command to `program`. */
export function registerChanges(program: Command): void {
  program
    .command("changes")
    .description("print the net changes of each version from A to B, in key order (with --json, one object per line)")
    .argument("<dir>", "store folder")
    .requiredOption("--from <A>", "first version", versionArg)
    .requiredOption("--to <B>", "last version", versionArg)
    .action(action((dir: string, opts: ChangesCliOptions, cmd: Command) => changes(dir, opts, cmd)));
}

async function changes(dir: string, opts: ChangesCliOptions, cmd: Command): Promise<number> {
  const g = globals(cmd);
  const mode = bytesMode(g);
  if (opts.from > opts.to) throw new UsageError(`--from ${opts.from} is after --to ${opts.to}`);
  return withReader(dir, (h) => {
    for (const c of h.changes(opts.from, opts.to)) {
      if (g.json) {
        const value = c.value === null ? { value: null } : bytesJson("value", c.value, mode);
        out(JSON.stringify({ version: c.version, ...bytesJson("key", c.key, mode), ...value }));
      } else if (c.value === null) out(`${c.version}  removed  ${bytesText(c.key, mode)}`);
      else out(`${c.version}  set      ${bytesText(c.key, mode)} = ${bytesText(c.value, mode)}`);
    }
    return 0;
  });
}
