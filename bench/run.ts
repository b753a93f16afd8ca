/**
 * `npm run bench -- [--quick] [--only core,mixed] [--profile <section>]`: runs the sections in order, prints every
 * figure beside its floor (stdout), writes bench/out/results.json and results.md, and exits 1 when a row misses its
 * target. `--profile <section>` writes that section's main-thread CPU profile to bench/out/<section>.cpuprofile
 * (node:inspector); for worker threads too, run `node --cpu-prof --import tsx bench/run.ts --only <section>`.
 * @module
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { join } from "node:path";
import { changes } from "./changes.js";
import { history } from "./history.js";
import { core } from "./core.js";
import { mixed } from "./mixed.js";
import { multi } from "./multi.js";
import { pages } from "./pages.js";
import { persistent } from "./persistent.js";
import { prune } from "./prune.js";
import { readers } from "./readers.js";
import { liveReplicas, replicas } from "./replicas.js";
import { Bench, OUT } from "./report.js";
import { scale } from "./scale.js";
import { serve } from "./serve.js";
import { serveAbuse } from "./serve-abuse.js";
import { stateSync } from "./state-sync.js";
import { gc } from "./timing.js";

const SECTIONS: Record<string, (b: Bench) => Promise<void>> = {
  core, persistent, mixed, prune, readers, "state-sync": stateSync, multi, serve, changes, scale, history, replicas,
};
/**
 * What `--only` may name: every section, and parts of one run only when named (`replicas` runs its own; `serve-abuse`
 * holds the service under abuse for minutes; `pages` counts what a layout not built yet would read and write).
 */
const RUNNABLE: Record<string, (b: Bench) => Promise<void>> = { ...SECTIONS, "replicas-live": liveReplicas, "serve-abuse": serveAbuse, pages };
const usage = `usage: npm run bench -- [--quick] [--only ${Object.keys(RUNNABLE).join(",")}] [--profile <section>]`;

function parse(argv: string[]): { quick: boolean; only: string[]; profile?: string } {
  const out: ReturnType<typeof parse> = { quick: false, only: Object.keys(SECTIONS) };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i]!.split("=", 2) as [string, string | undefined];
    const value = (): string => inline ?? argv[++i] ?? "";
    if (flag === "--quick") out.quick = true;
    else if (flag === "--only") out.only = value().split(",").filter((s) => s !== "");
    else if (flag === "--profile") out.profile = value();
    else if (flag === "--help" || flag === "-h") process.stdout.write(`${usage}\n`), process.exit(0);
    else throw new Error(`unknown argument ${argv[i]}\n${usage}`);
  }
  const unknown = [...out.only, ...(out.profile === undefined ? [] : [out.profile])].filter((n) => !(n in RUNNABLE));
  if (unknown.length > 0 || out.only.length === 0) throw new Error(`unknown section ${unknown.join(", ")}\n${usage}`);
  return out;
}

async function profiled(name: string, run: () => Promise<void>): Promise<void> {
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.start");
  try {
    await run();
  } finally {
    const { profile } = await session.post("Profiler.stop");
    writeFileSync(join(OUT, `${name}.cpuprofile`), JSON.stringify(profile));
    process.stderr.write(`wrote ${join(OUT, `${name}.cpuprofile`)} (open it in Chrome DevTools or speedscope)\n`);
    session.disconnect();
  }
}

let args: ReturnType<typeof parse>;
try {
  args = parse(process.argv.slice(2));
} catch (e) {
  process.stderr.write(`bench: ${(e as Error).message}\n`);
  process.exit(2);
}
const bench = new Bench(args.quick);
process.once("exit", () => bench.cleanup(true));
if (typeof globalThis.gc !== "function") bench.notes.push("node ran without --expose-gc: no full GC between phases");
const t0 = performance.now();
for (const name of args.only) {
  bench.section = name;
  const t = performance.now();
  const run = (): Promise<void> => RUNNABLE[name]!(bench);
  try {
    await (args.profile === name ? profiled(name, run) : run());
  } catch (e) {
    // One broken section must not hide the others' figures; it still fails the run.
    bench.note(`FAILED: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    process.exitCode = 1;
  }
  bench.log(`done in ${((performance.now() - t) / 1000).toFixed(0)} s`);
  bench.cleanup(false);
  gc();
}
bench.notes.push(`the run took ${((performance.now() - t0) / 60_000).toFixed(1)} min`);
process.stdout.write(`${bench.table()}\n`);
bench.write();
if (bench.rows.some((r) => r.pass === false)) process.exitCode = 1;
