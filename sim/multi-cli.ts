/**
 * The CLI steps of a multi-store life, run as an operator would on the folder (each command is a child process of
 * ~1–2 s): `info` and `verify --all` beside the live writer, `prune --keep-recent` and `rollback --to --yes` with the
 * writer closed (and, first, refused beside it with LOCKED naming the writer process).
 * @module
 */
import { z } from "zod";
import { cli as runCli, cliErrorCode, type CliResult } from "./multi-checks.js";
import type { MultiStep } from "./multi-life.js";
import type { MultiRun } from "./multi-runner.js";

const infoSchema = z.object({
  stores: z.array(z.object({ name: z.string(), latest: z.object({ version: z.number(), hash: z.string() }).nullable() })),
});
const verifySchema = z.object({ ok: z.boolean() });
const pruneSchema = z.object({ target: z.number(), latest: z.number() });
const rollbackSchema = z.object({ to: z.number(), appHash: z.string(), done: z.boolean() });

/** Runs one command, noting it in the life's log. */
function cli(run: MultiRun, args: string[]): CliResult {
  const r = runCli(args);
  run.log(`   iavlite ${args[0]} ${args.slice(2).join(" ")}: exit ${r.status}`);
  return r;
}

export async function runMultiCli(run: MultiRun, s: Extract<MultiStep, { t: "cli" }>): Promise<void> {
  if (run.model.version === 0) return;
  if (s.cmd === "inspect") return inspect(run);
  if (s.cmd === "prune") return prune(run, s.keep, s.beside);
  return rollback(run, s.pick, s.beside);
}

/** The JSON value a command that must succeed printed, parsed by `schema`. */
function ok<T>(run: MultiRun, args: string[], r: CliResult, schema: z.ZodType<T>): T {
  const line = `iavlite ${args.slice(0, 1).join(" ")} ${args.slice(2).join(" ")}`;
  if (r.status !== 0) run.fail(`${line} exited ${r.status}: ${r.stdout.slice(0, 1000)} ${r.stderr.slice(0, 1000)}`);
  if (r.json === undefined) run.fail(`${line} printed no single JSON value: ${r.stdout.slice(0, 500)}`);
  const parsed = schema.safeParse(r.json);
  if (!parsed.success) run.fail(`${line} printed unexpected JSON (${parsed.error.message.slice(0, 300)}): ${r.stdout.slice(0, 500)}`);
  return parsed.data;
}

/** A command that changes the folder, beside the live writer: refused with LOCKED naming this process (1 exit). */
function refused(run: MultiRun, args: string[], alsoAllowed: string | undefined): void {
  const r = cli(run, args);
  const code = cliErrorCode(r.json);
  if (r.status === 1 && code !== undefined && code === alsoAllowed) return;
  if (r.status !== 1 || code !== "LOCKED") run.fail(`iavlite ${args[0]} beside the live writer exited ${r.status} with ${r.stdout.slice(0, 500)}, expected LOCKED`);
  if (!r.stdout.includes(String(process.pid))) run.fail(`iavlite ${args[0]} refused with LOCKED without naming the writer process ${process.pid}: ${r.stdout.slice(0, 500)}`);
}

/** `info --json` and `verify --all --json` beside the live writer. */
function inspect(run: MultiRun): void {
  const m = run.model;
  const infoArgs = ["info", run.dir, "--json"];
  const info = ok(run, infoArgs, cli(run, infoArgs), infoSchema);
  const names = info.stores.map((s) => s.name);
  if (names.join() !== [...m.order].sort().join()) run.fail(`iavlite info lists stores ${names.join(",")}, the folder has ${m.order.join(",")}`);
  for (const s of info.stores) {
    const want = m.started(s.name) ? { version: m.version, hash: m.rec(s.name, m.version)!.hash } : null;
    if (JSON.stringify(s.latest === null ? null : { version: s.latest.version, hash: s.latest.hash }) !== JSON.stringify(want)) {
      run.fail(`iavlite info: store ${s.name} latest ${JSON.stringify(s.latest)}, expected ${JSON.stringify(want)}`);
    }
  }
  const verifyArgs = ["verify", run.dir, "--all", "--json"];
  const verify = ok(run, verifyArgs, cli(run, verifyArgs), verifySchema);
  if (!verify.ok) run.fail(`iavlite verify --all found faults: ${JSON.stringify(verify).slice(0, 1000)}`);
}

/**
 * `info` and `verify --all` on the folder as a killed writer left it (a store may be a version ahead, a rollback
 * half done): they read it as it is, without the writer's recovery, and must not fail.
 */
export function inspectAfterKill(run: MultiRun): void {
  for (const args of [["info", run.dir, "--json"], ["verify", run.dir, "--all", "--json"]]) {
    const out = ok(run, args, cli(run, args), z.object({}).passthrough());
    if (args[0] === "verify" && out.ok !== true) run.fail(`iavlite verify --all after the kill found faults: ${JSON.stringify(out).slice(0, 1000)}`);
  }
}

/** `prune --keep-recent N` with the writer closed: every store pruned to latest − N, without snapshots. */
async function prune(run: MultiRun, keep: number, beside: boolean): Promise<void> {
  const args = ["prune", run.dir, "--keep-recent", String(keep), "--json"];
  if (beside) refused(run, args, undefined);
  await run.closeWriter();
  const latest = run.model.version;
  const target = latest - keep;
  // The oldest version of any store, a snapshot of keepEvery included, as the closed folder holds it.
  const first = run.firstKept();
  const out = ok(run, args, cli(run, args), pruneSchema);
  if (out.target !== target || out.latest !== latest) run.fail(`iavlite prune says target ${out.target} of latest ${out.latest}, expected ${target} of ${latest}`);
  // Below that version it prunes to just before it (src/cli/prune.ts, pruneTo): nothing more of the stores, but the
  // marker forgets the app hashes of versions no store keeps, which automatic prunes leave. (The stores' keptFrom
  // would not do: it is past the snapshots kept, which such a prune keeps; seed 1585295872.)
  const to = target >= first ? target : first - 1;
  if (to >= 1) {
    // It opens the folder with no keepEvery: snapshots go too.
    run.pruning(to, undefined);
    run.pruned(to, latest, undefined);
  }
  run.openWriter();
  run.checkAll();
}

/** `rollback --to V --yes` with the writer closed, to a version every store keeps. */
async function rollback(run: MultiRun, pick: number, beside: boolean): Promise<void> {
  if (beside) {
    await run.settle();
    const before = run.keptEverywhere().filter((v) => v < run.model.version);
    const to = before[before.length - 1];
    // An automatic prune may take the version meanwhile: then it is refused for that first.
    if (to !== undefined) refused(run, ["rollback", run.dir, "--to", String(to), "--yes", "--json"], run.mustKeep(run.model.order[0]!, to) ? undefined : "VERSION_PRUNED");
  }
  await run.closeWriter();
  const kept = run.keptEverywhere();
  if (kept.length > 0) {
    const to = kept[Math.floor(pick * kept.length)]!;
    const args = ["rollback", run.dir, "--to", String(to), "--yes", "--json"];
    const out = ok(run, args, cli(run, args), rollbackSchema);
    const want = run.model.appHashes.get(to);
    if (out.to !== to || out.appHash !== want || !out.done) run.fail(`iavlite rollback --to ${to} said ${JSON.stringify(out)}, expected app hash ${want}`);
    run.rolledBack(to);
  }
  run.openWriter();
  run.checkAll();
}
