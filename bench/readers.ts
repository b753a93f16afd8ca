/**
 * The readers section: writer throughput on the three-store mixed profile (values ÷10, so that the initial load
 * stays small) while three reader processes (bench/reader-child.ts) loop over `at(v).get` of kept versions, against
 * the writer alone in the same run, each phase from an identical copy of the loaded stores.
 *
 * A third phase runs the readers at nice 19 (context): on a machine with fewer cores than processes, the difference
 * between the two tells CPU sharing apart from interference inside SQLite (locks, WAL, checkpoints).
 *
 * Readers verify every read: the writer appends, after each commit, facts of that version (a key's last change in
 * it: the sha256 of the value set, or absent when deleted) to `facts.jsonl`, and the readers check reads of those
 * versions against them exactly.
 * @module
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { appendFileSync, copyFileSync, writeFileSync } from "node:fs";
import { setPriority } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { maybeGc, median, timeNs, type Report } from "./report.js";
import type { Fact, ReaderResult } from "./reader-child.js";
import { byStore, commitVersion, copyStore, countChanges, loadInitial, openStores, removeDir, scaleValues, scratchDir, withInitialSize } from "./stores.js";
import { MIXED, Workload, type Change } from "./workload.js";

const SECTION = "readers";
const SEED = 31;
const READERS = 3;
/** Facts per store per version. */
const FACTS_PER_STORE = 12;

const CHILD = fileURLToPath(new URL("./reader-child.ts", import.meta.url));
const REPO = fileURLToPath(new URL("..", import.meta.url));

/** Options of {@link runReaders}. */
export interface ReadersOptions {
  quick: boolean;
}

function hex(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("hex");
}

/** Facts of one version: each sampled key's last change in it. */
function factsOf(version: number, changes: readonly Change[], perStore: number): Fact[] {
  const last = new Map<string, Change>();
  for (const c of changes) last.set(`${c.store}/${hex(c.key)}`, c);
  const out: Fact[] = [];
  const taken = new Map<string, number>();
  for (const c of last.values()) {
    const n = taken.get(c.store) ?? 0;
    if (n >= perStore) continue;
    taken.set(c.store, n + 1);
    out.push({ s: c.store, k: hex(c.key), v: version, h: c.delete ? null : createHash("sha256").update(c.value!).digest("hex") });
  }
  return out;
}

interface Phase {
  ops: number;
  ns: number;
  perVersionNs: number[];
  readers: ReaderResult[];
}

export async function runReaders(report: Report, opts: ReadersOptions): Promise<void> {
  const root = scratchDir(SECTION);
  const children: ChildProcess[] = [];
  try {
    const versions = opts.quick ? 15 : 40;
    let profiles = scaleValues(MIXED, 10);
    if (opts.quick) profiles = withInitialSize(profiles, 5_000);
    const names = new Workload(profiles, SEED).storeNames;
    const template = join(root, "template");
    report.log(`[${SECTION}] loading the mixed profile (values ÷10), ${profiles[0]!.initialSize.toLocaleString("en-US")} keys × 3 stores`);
    {
      const w = new Workload(profiles, SEED);
      const trees = openStores(template, names);
      loadInitial(w, names, trees);
      // Facts of version 1, so that readers have something to read from the start.
      const facts: Fact[] = [];
      for (const n of names) {
        const keys = w.liveKeys(n);
        const view = trees[names.indexOf(n)]!.at(1);
        for (let i = 0; i < 400; i++) {
          const k = keys[(i * 7919) % keys.length]!;
          facts.push({ s: n, k: hex(k), v: 1, h: createHash("sha256").update(view.get(k)!).digest("hex") });
        }
      }
      writeFileSync(join(template, "facts.jsonl"), `${JSON.stringify(facts)}\n`);
      for (const t of trees) t.close();
    }

    const phase = async (readers: "none" | "normal" | "nice"): Promise<Phase> => {
      report.log(`[${SECTION}] ${versions} versions, ${readers === "none" ? "writer alone" : `${READERS} readers${readers === "nice" ? " at nice 19" : ""}`}`);
      maybeGc();
      const dir = join(root, readers);
      for (const n of names) copyStore(join(template, n), join(dir, n));
      copyFileSync(join(template, "facts.jsonl"), join(dir, "facts.jsonl"));
      const w = new Workload(profiles, SEED);
      for (const c of w.initial()) void c;
      const trees = openStores(dir, names);
      const r: Phase = { ops: 0, ns: 0, perVersionNs: [], readers: [] };
      const outputs: Array<Promise<ReaderResult>> = [];
      try {
        if (readers !== "none") {
          const ready: Array<Promise<void>> = [];
          for (let i = 0; i < READERS; i++) {
            const child = spawn(process.execPath, ["--import", "tsx", CHILD, dir, String(SEED * 100 + i)], { cwd: REPO, stdio: ["ignore", "pipe", "inherit"] });
            children.push(child);
            if (readers === "nice" && child.pid !== undefined) setPriority(child.pid, 19);
            const { ready: rd, result } = readChild(child);
            ready.push(rd);
            outputs.push(result);
          }
          await Promise.all(ready);
        }
        for (let v = 0; v < versions; v++) {
          const changes = w.nextVersion();
          const groups = byStore(names, changes);
          const ns = timeNs(() => commitVersion(trees, groups));
          r.ops += countChanges(groups);
          r.ns += ns;
          r.perVersionNs.push(ns);
          // Outside the timing, and in every phase alike.
          appendFileSync(join(dir, "facts.jsonl"), `${JSON.stringify(factsOf(trees[0]!.version, changes, FACTS_PER_STORE))}\n`);
        }
        writeFileSync(join(dir, "stop"), "");
        r.readers = await Promise.all(outputs);
      } finally {
        for (const t of trees) t.close();
      }
      removeDir(dir);
      return r;
    };

    const alone = await phase("none");
    const shared = await phase("normal");
    const niced = await phase("nice");

    const floorName = "writer alone, same versions, same store copy";
    const floorRate = alone.ops / (alone.ns / 1e9);
    const label = `writer, mixed (values ÷10), ${versions} versions × ~${Math.round(alone.ops / versions).toLocaleString("en-US")} changes`;
    report.add({
      section: SECTION,
      name: `${label}, with ${READERS} reader processes`,
      value: shared.ops / (shared.ns / 1e9),
      unit: "ops/s",
      floorName,
      floorValue: floorRate,
      target: 1.25,
      note: `target: ≥ 0.8× the writer alone; per-version median ${(median(shared.perVersionNs) / 1e6).toFixed(0)} ms vs ${(median(alone.perVersionNs) / 1e6).toFixed(0)} ms alone`,
    });
    report.add({
      section: SECTION,
      name: `${label}, with ${READERS} reader processes at nice 19`,
      value: niced.ops / (niced.ns / 1e9),
      unit: "ops/s",
      floorName,
      floorValue: floorRate,
      note: `context: the same readers with the lowest CPU priority; per-version median ${(median(niced.perVersionNs) / 1e6).toFixed(0)} ms`,
    });
    const total = (rs: ReaderResult[], f: (x: ReaderResult) => number): number => rs.reduce((a, x) => a + f(x), 0);
    const rate = (rs: ReaderResult[], n: (x: ReaderResult) => number, ms: (x: ReaderResult) => number): number =>
      rs.reduce((a, x) => a + (ms(x) > 0 ? n(x) / (ms(x) / 1000) : 0), 0);
    const treeRate = rate(shared.readers, (x) => x.reads, (x) => x.treeMs);
    const rawRate = rate(shared.readers, (x) => x.rawReads, (x) => x.rawMs);
    report.add({
      section: SECTION,
      name: `readers: at(v).get on kept versions, ${READERS} processes, total while the writer runs`,
      value: treeRate,
      unit: "reads/s",
      floorName: "raw SELECT … version <= ? LIMIT 1, same processes (1 batch in 10)",
      floorValue: rawRate,
      note: `${total(shared.readers, (x) => x.reads).toLocaleString("en-US")} tree reads; at nice 19: ${rate(niced.readers, (x) => x.reads, (x) => x.treeMs).toFixed(0)} reads/s (raw ${rate(niced.readers, (x) => x.rawReads, (x) => x.rawMs).toFixed(0)})`,
    });
    const all = [...shared.readers, ...niced.readers];
    const reads = total(all, (x) => x.reads + x.rawReads);
    const errors = total(all, (x) => x.errors);
    const bad = total(all, (x) => x.mismatches);
    const firstError = all.find((x) => x.firstError !== undefined)?.firstError;
    report.add({
      section: SECTION,
      name: "readers: reads that disagree with the writer's facts (both reader phases)",
      value: bad,
      unit: "reads",
      floorName: "reads checked",
      floorValue: reads,
      target: 0,
      note: `every read checked against the sha256 (or absence) the writer recorded for that key and version; ${errors} of them threw${firstError === undefined ? "" : ` (first: ${firstError})`}`,
    });
  } finally {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill();
    removeDir(root);
  }
}

/** Resolves `ready` on the child's first line and `result` with its final JSON line. */
function readChild(child: ChildProcess): { ready: Promise<void>; result: Promise<ReaderResult> } {
  let buf = "";
  let onReady: () => void = () => undefined;
  let failReady: (e: Error) => void = () => undefined;
  const ready = new Promise<void>((res, rej) => {
    onReady = res;
    failReady = rej;
  });
  const result = new Promise<ReaderResult>((res, rej) => {
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (d: string) => {
      buf += d;
      if (buf.startsWith("ready\n")) onReady();
    });
    child.on("exit", (code) => {
      const lines = buf.split("\n").filter((l) => l !== "" && l !== "ready");
      const last = lines[lines.length - 1];
      if (code === 0 && last !== undefined) {
        res(JSON.parse(last) as ReaderResult);
      } else {
        const e = new Error(`bench: reader process exited with ${code}`);
        failReady(e);
        rej(e);
      }
    });
  });
  result.catch(() => undefined);
  return { ready, result };
}
