/**
 * The `replicas` section, Litestream's part: the writer's commit rate with Litestream replicating its folder beside
 * it (every SQLite file to a file:// replica, as `iavlite replicate` configures it) against the same writer alone,
 * with iavlite checkpointing the WAL itself (walCheckpoints "own") and leaving it to Litestream ("external").
 *
 * The mixed profile's three stores as one multi-store folder (durability normal), at a third of the profile's initial
 * size with values a quarter as long, committed version after version with a rest of 20 ms between versions, as a
 * node rests between blocks: a writer that never lets go of the write lock starves Litestream's checkpoints (its WAL
 * then grows and replication falls behind until writes pause). Each subject runs in two rounds, in opposite orders, on
 * fresh folders; the rate is changes over the time inside put and commit. Beside each figure: the WAL's peak (all
 * files), the generations Litestream started beyond the first of each file (a checkpoint it did not expect), and the
 * CPU time Litestream used per version.
 * @module
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { MultiTree } from "../src/index.js";
import { litestreamBinary, litestreamConfig, sqliteFiles } from "../src/cli/litestream.js";
import { floorOf, type Bench } from "./report.js";
import { scaled } from "./subjects.js";
import { mib, sum } from "./timing.js";
import { MIXED, Workload, type Change } from "./workload.js";

const SEED = 31;
const REST_MS = 20;

type Mode = "own" | "external";

/** One subject: how the WAL is checkpointed, and whether Litestream replicates beside the writer. */
interface Subject {
  name: string;
  mode: Mode;
  litestream: boolean;
}

/** What one round of a subject measured. */
interface Round {
  ops: number;
  ns: number;
  versions: number;
  walPeak: number;
  extraGenerations: number;
  litestreamCpuMs: number;
}

const SUBJECTS: Subject[] = [
  { name: "own, alone", mode: "own", litestream: false },
  { name: "own + litestream", mode: "own", litestream: true },
  { name: "external + litestream", mode: "external", litestream: true },
  { name: "external, alone", mode: "external", litestream: false },
];

export async function litestreamReplicas(b: Bench): Promise<void> {
  const versions = b.q(40, 150);
  const figures = await measureLitestream(b, versions, REST_MS);
  const floor = figures.get(SUBJECTS[0]!.name)!;
  const rate = (r: Round): number => r.ops / (r.ns / 1e9);
  for (const s of SUBJECTS.slice(1)) {
    const r = figures.get(s.name)!;
    const notes = [`WAL peak ${mib(r.walPeak).toFixed(0)} MiB (alone with own: ${mib(floor.walPeak).toFixed(0)} MiB)`];
    if (s.litestream) notes.push(`${r.extraGenerations} extra generation(s)`, `litestream ${(r.litestreamCpuMs / r.versions).toFixed(1)} ms CPU a version`);
    if (!s.litestream && s.mode === "external") notes.push("nothing checkpoints: the WAL only grows (a misconfiguration, shown for its cost)");
    b.row(`mixed, ${s.name}`, rate(r), "changes/s", floorOf("the same writer alone, own checkpoints", rate(floor)), {
      // The writer beside Litestream keeps ≥ 0.8× its rate alone (issue 25); the WAL left to nobody has no target.
      ...(s.litestream ? { target: 1 / 0.8 } : {}),
      note: notes.join("; "),
    });
  }
}

/**
 * Runs every subject for `versions` versions in two rounds (opposite orders, fresh folders), resting `restMs` between
 * versions; the rounds of each subject summed, by subject name.
 */
export async function measureLitestream(b: Bench, versions: number, restMs: number): Promise<Map<string, Round>> {
  const out = new Map<string, Round>();
  for (const order of [SUBJECTS, [...SUBJECTS].reverse()]) {
    for (const s of order) {
      const r = await round(b, s, versions, restMs);
      const was = out.get(s.name);
      out.set(
        s.name,
        was === undefined
          ? r
          : {
              ops: was.ops + r.ops,
              ns: was.ns + r.ns,
              versions: was.versions + r.versions,
              walPeak: Math.max(was.walPeak, r.walPeak),
              extraGenerations: was.extraGenerations + r.extraGenerations,
              litestreamCpuMs: was.litestreamCpuMs + r.litestreamCpuMs,
            },
      );
      b.log(`  ${s.name}: ${Math.round(r.ops / (r.ns / 1e9))} changes/s, WAL peak ${mib(r.walPeak).toFixed(0)} MiB, ${r.extraGenerations} extra generation(s)`);
    }
  }
  return out;
}

async function round(b: Bench, s: Subject, versions: number, restMs: number): Promise<Round> {
  const dir = b.dir("replicas");
  const data = join(dir, "data");
  const profiles = scaled(MIXED, { initialSize: Math.round(35_000 / 3), values: 4 });
  const w = new Workload(profiles, SEED);
  const m = MultiTree.open(data, { stores: w.storeNames, walCheckpoints: s.mode });
  const put = (changes: Iterable<Change>): number => {
    let n = 0;
    for (const c of changes) {
      const t = m.tree(c.store);
      if (c.delete) t.remove(c.key);
      else t.set(c.key, c.value!);
      n++;
    }
    return n;
  };
  put(w.initial());
  m.commit();
  const files = sqliteFiles(data).map((f) => join(data, f));
  const ls = s.litestream ? await startLitestream(dir, data) : undefined;
  let ops = 0;
  let ns = 0;
  let walPeak = 0;
  try {
    for (let v = 0; v < versions; v++) {
      const changes = w.nextVersion();
      const t0 = process.hrtime.bigint();
      ops += put(changes);
      m.commit();
      ns += Number(process.hrtime.bigint() - t0);
      walPeak = Math.max(walPeak, sum(files.map((f) => (existsSync(`${f}-wal`) ? statSync(`${f}-wal`).size : 0))));
      await new Promise((r) => setTimeout(r, restMs));
    }
  } finally {
    m.close();
  }
  if (ls === undefined) return { ops, ns, versions, walPeak, extraGenerations: 0, litestreamCpuMs: 0 };
  const cpu = cpuMs(ls.p.pid!);
  const log = await ls.stop();
  const generations = (log.match(/new generation/g) ?? []).length;
  return { ops, ns, versions, walPeak, extraGenerations: generations - files.length, litestreamCpuMs: cpu - ls.cpuAtStart };
}

/** Litestream replicating every file of `data` to `dir/replica` (sync interval 1s, its default), once it shipped each. */
export async function startLitestream(dir: string, data: string): Promise<{ p: ChildProcess; cpuAtStart: number; stop: () => Promise<string> }> {
  const config = join(dir, "litestream.yml");
  const files = sqliteFiles(data);
  writeFileSync(config, litestreamConfig(data, files, pathToFileURL(join(dir, "replica")).href));
  const p = spawn(litestreamBinary(), ["replicate", "-config", config], { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  p.stdout!.on("data", (d: Buffer) => (log += d.toString()));
  p.stderr!.on("data", (d: Buffer) => (log += d.toString()));
  const ended = new Promise<void>((r) => p.on("close", () => r()));
  const t0 = Date.now();
  while ((log.match(/snapshot written/g) ?? []).length < files.length) {
    if (Date.now() - t0 > 60_000) throw new Error(`litestream did not start: ${log.slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    p,
    cpuAtStart: cpuMs(p.pid!),
    stop: async () => {
      p.kill("SIGTERM");
      await ended;
      return log;
    },
  };
}

/** CPU time (user + system) process `pid` used so far, in ms, from /proc (Linux). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  // utime and stime are fields 14 and 15 of stat, in clock ticks (100 a second on Linux).
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}
