/**
 * Bench entry point: `npm run bench [-- --quick] [-- --only core,persistent]`.
 *
 * Each section adds rows to one {@link Report}; every row is a ratio to a floor measured in the same run. Adding a
 * section is one line in {@link SECTIONS}.
 * @module
 */
import { fileURLToPath } from "node:url";
import { runCore } from "./core.js";
import { maybeGc, Report } from "./report.js";

/** What every section gets. */
export interface BenchOptions {
  /** Smaller sizes, for a smoke run. */
  quick: boolean;
}

interface Section {
  name: string;
  run: (report: Report, opts: BenchOptions) => Promise<void>;
}

/** The sections, run in this order. */
const SECTIONS: Section[] = [
  { name: "core", run: (r, o) => runCore(r, { keys: o.quick ? 100_000 : 1_000_000, versions: o.quick ? 30 : 50 }) },
  { name: "persistent", run: async (r, o) => (await import("./persistent.js")).runPersistent(r, o) },
  { name: "prune", run: async (r, o) => (await import("./prune.js")).runPrune(r, o) },
  { name: "readers", run: async (r, o) => (await import("./readers.js")).runReaders(r, o) },
  { name: "state-sync", run: async (r, o) => (await import("./state-sync.js")).runStateSync(r, o) },
  { name: "multi", run: async (r, o) => (await import("./multi.js")).runMulti(r, o) },
];

function parseArgs(argv: string[]): { quick: boolean; only: Set<string> | undefined } {
  let quick = false;
  let only: Set<string> | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--quick") quick = true;
    else if (a === "--only" || a.startsWith("--only=")) {
      const v = a === "--only" ? argv[++i] : a.slice("--only=".length);
      if (v === undefined || v === "") throw new Error("--only needs a section name (comma-separated for several)");
      only = new Set(v.split(",").map((s) => s.trim()).filter((s) => s !== ""));
    } else if (a === "--help" || a === "-h") {
      process.stdout.write(`usage: npm run bench -- [--quick] [--only ${SECTIONS.map((s) => s.name).join(",")}]\n`);
      process.exit(0);
    } else {
      throw new Error(`unknown argument ${a} (try --help)`);
    }
  }
  if (only !== undefined) {
    const unknown = [...only].filter((n) => !SECTIONS.some((s) => s.name === n));
    if (unknown.length > 0) throw new Error(`unknown section(s) ${unknown.join(", ")}; known: ${SECTIONS.map((s) => s.name).join(", ")}`);
  }
  return { quick, only };
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  let args: ReturnType<typeof parseArgs>;
  try {
    args = parseArgs(argv);
  } catch (e) {
    process.stderr.write(`bench: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(2);
  }
  const { quick, only } = args;
  const report = new Report(argv);
  if (typeof globalThis.gc !== "function") report.note("node ran without --expose-gc: no forced GC between phases");
  for (const s of SECTIONS) {
    if (only !== undefined && !only.has(s.name)) continue;
    const t0 = performance.now();
    await s.run(report, { quick });
    report.log(`[${s.name}] done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    maybeGc();
  }
  report.print();
  const out = fileURLToPath(new URL("./out/results.json", import.meta.url));
  report.write(out);
  report.log(`wrote ${out} (and results.md)`);
  if (report.rows.some((r) => r.pass === false)) process.exitCode = 1;
}

await main();
