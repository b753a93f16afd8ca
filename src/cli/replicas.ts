/**
 * `iavlite replicate <dir> --to URL` and `iavlite restore <URL> <dir>`, the two ends of Litestream replication (one
 * module, as export and import would be one were they as thin): replicate runs Litestream on every SQLite file of a
 * store or multi-store folder (a multi-store's commit marker included), each to `URL/<its path in the folder>`, in
 * the foreground, or with `--config-only` writes the config it would run; restore brings every file back from
 * those replicas into a new folder, then checks it (restored.ts).
 * @module
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { InvalidArgumentError, Option, type Command } from "commander";
import { IavlError } from "../base/errors.js";
import { action, storesAsked } from "./command.js";
import { globals, note, out, UsageError, versionArg } from "./format.js";
import { durationArg, litestreamConfig, progressArg, restoreReplicas, runLitestreamForeground, sqliteFiles, unrestore } from "./litestream.js";
import { checkRestored } from "./restored.js";

interface ReplicateOptions {
  to: string;
  configOnly?: boolean;
  config?: string;
  syncInterval?: string;
  verbose?: boolean;
  progress: number;
}

/** Adds the `replicate` command to `program`. */
export function registerReplicate(program: Command): void {
  program
    .command("replicate")
    .description(
      "replicate every SQLite file of the folder with Litestream (each to URL/<its path>), in the foreground until SIGINT or SIGTERM; " +
        'the writer should run with walCheckpoints "external" (docs/replicas.md, "Replicating with Litestream")',
    )
    .argument("<dir>", "store folder, or multi-store folder (its commit marker and every store)")
    .requiredOption("--to <URL>", "where the replicas go: file:///path, a plain path, or s3://bucket/path (credentials as Litestream reads them)")
    .option("--sync-interval <duration>", "how often Litestream looks at each WAL and ships what changed (Litestream's default: 1s)", durationArg)
    .option("--config <file>", "write the config to FILE (and keep it) instead of a temporary file")
    .option("--config-only", "only write the config (to --config FILE, or stdout) and exit")
    .addOption(
      new Option("--progress <duration>", "how often to print one line counting the WAL segments shipped meanwhile, in place of Litestream's two lines for each (0: one line, when it stops)")
        .argParser(progressArg)
        .default(60_000, "1m"),
    )
    .addOption(new Option("--verbose", "print every line Litestream logs, two for each WAL segment it ships among them").conflicts("progress"))
    .action(action({ folder: "none", takes: [] }, (dir: string, opts: ReplicateOptions) => replicate(dir, opts)));
}

async function replicate(dir: string, opts: ReplicateOptions): Promise<number> {
  const config = litestreamConfig(dir, sqliteFiles(dir), opts.to, opts.syncInterval);
  if (opts.configOnly === true) {
    if (opts.config === undefined) process.stdout.write(config);
    else {
      writeFileSync(opts.config, config);
      out(`wrote ${resolve(opts.config)}: run litestream replicate -config ${resolve(opts.config)}`);
    }
    return 0;
  }
  const temp = opts.config === undefined ? mkdtempSync(join(tmpdir(), "iavlite-litestream-")) : undefined;
  const file = opts.config ?? join(temp!, "litestream.yml");
  writeFileSync(file, config);
  note(`replicating ${resolve(dir)} to ${opts.to} with litestream (config ${resolve(file)}); stop with Ctrl-C`);
  try {
    return await runLitestreamForeground(["replicate", "-config", file], { verbose: opts.verbose === true, progressMs: opts.progress });
  } finally {
    if (temp !== undefined) rmSync(temp, { recursive: true, force: true });
  }
}

interface RestoreOptions {
  version?: number;
  timestamp?: string;
}

/** Adds the `restore` command to `program`. */
export function registerRestore(program: Command): void {
  program
    .command("restore")
    .description(
      "restore a store or multi-store folder from the Litestream replicas replicate made into a new folder, bring it to a version " +
        "every store holds whole, and verify every hash of that version (exit status 1 on any fault)",
    )
    .argument("<URL>", "where the replicas are (replicate's --to): file:///path, a plain path, or s3://bucket/path (then name a multi-store's stores with --store)")
    .argument("<dir>", "the new folder (missing or empty)")
    .addOption(new Option("--version <V>", "roll the restored folder back to version V (refused unless every store kept it)").argParser(versionArg))
    .addOption(
      new Option("--timestamp <T>", "restore each file as it was at time T (ISO 8601 such as 2025-01-31T12:00:00Z; litestream restore -timestamp)")
        .argParser(timeArg)
        .conflicts("version"),
    )
    .action(
      action({ folder: "none", takes: ["json", "store"] }, (from: string, dir: string, opts: RestoreOptions, cmd: Command) => restore(from, dir, opts, cmd)),
    );
}

/** A time as Litestream reads it (RFC 3339, in UTC), from any ISO 8601 time `Date` reads. */
function timeArg(value: string): string {
  const t = Date.parse(value);
  if (!/^\d{4}-\d\d-\d\d/.test(value) || Number.isNaN(t)) throw new InvalidArgumentError(`must be an ISO 8601 time such as 2025-01-31T12:00:00Z, got "${value}"`);
  return new Date(t).toISOString();
}

async function restore(from: string, dir: string, opts: RestoreOptions, cmd: Command): Promise<number> {
  const g = globals(cmd);
  if (existsSync(dir) && (!statSync(dir).isDirectory() || readdirSync(dir).length > 0)) {
    throw new UsageError(`${dir} is not an empty folder: restore writes a new one; nothing was restored`);
  }
  const existed = existsSync(dir);
  const files = await restoreReplicas(from, dir, storesAsked(cmd), opts.timestamp);
  if (!g.json) out(`restored ${files.files.length} file(s) from ${from} into ${dir} in ${files.seconds.toFixed(2)} s${opts.timestamp === undefined ? "" : ` (as of ${opts.timestamp})`}`);
  const head = { from, dir, files: files.files, seconds: Number(files.seconds.toFixed(3)), timestamp: opts.timestamp ?? null };
  try {
    return await checkRestored(dir, files, opts.version, g.json, head);
  } catch (e) {
    // A restore that cannot give the version asked for leaves nothing to be opened by mistake.
    unrestore(dir, existed);
    if (e instanceof IavlError) throw new IavlError(e.code, `${e.message}; nothing was restored (${dir} is ${existed ? "empty" : "gone"} again)`, { cause: e });
    throw e;
  }
}
