/**
 * Bench child processes (see `Child` in bench/harness.ts), talking to the bench over IPC:
 *
 * - `grow <dir> <durability>`: a store alone in its process, so that the RSS measured is the store's and not the
 *   bench's (the workload generator's live keys, the floors' page caches). Each message is one version's changes:
 *   it applies and commits them and answers the set/remove + commit time in ns. `null` ends the run; the answer is
 *   then a {@link GrowResult}. RSS is sampled after each version's set/remove and after its commit.
 * - `reader <dir> <seed> <store>...`: reads in a loop, `at(v).get(key)` through `Tree.openReadOnly`, of facts the
 *   writer sends after each commit (a key's value hash at a version, or null when deleted), checking every read. One
 *   batch in ten reads the same facts from the writer's plain versioned tables instead
 *   (`<dir>/plain-<store>-<layout>.sqlite`, both layouts in turn): the floor. `"stop"` ends it with a
 *   {@link ReaderResult}.
 * @module
 */
import { hash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { setImmediate as tick } from "node:timers/promises";
import { Tree, type OpenOptions } from "../src/index.js";
import { LAYOUTS, plainDb, type Layout } from "./harness.js";
import { Rng, type Change } from "./workload.js";

/** Resident memory in MiB from /proc/self/status: all of it, anonymous (heap), and mapped files. */
export interface Rss {
  rss: number;
  anon: number;
  file: number;
}

export interface GrowResult {
  latest: number;
  size: number;
  base: Rss;
  peak: Rss;
  peakVersion: number;
  /** V8 heap used at the peak, MiB. */
  peakHeap: number;
}

/** A checkable read: in store `s`, key `k` holds at version `v` a value whose sha256 (hex) is `h`, or none. */
export interface Fact {
  s: number;
  k: Uint8Array;
  v: number;
  h: string | null;
}

export interface ReaderResult {
  reads: number;
  ms: number;
  /** Floor reads and their time, per layout. */
  plain: Record<Layout, { reads: number; ms: number }>;
  mismatches: number;
  errors: number;
  firstError?: string;
}

function rss(): Rss {
  const text = readFileSync("/proc/self/status", "utf8");
  const mib = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+)`, "m").exec(text)?.[1] ?? Number.NaN) / 1024;
  return { rss: mib("VmRSS"), anon: mib("RssAnon"), file: mib("RssFile") };
}

const send = (m: unknown): void => void process.send!(m as object);

function grow(dir: string, durability: OpenOptions["durability"]): void {
  const tree = Tree.open(dir, { durability });
  const base = rss();
  const r: GrowResult = { latest: 0, size: 0, base, peak: base, peakVersion: 0, peakHeap: 0 };
  const sample = (version: number): void => {
    const now = rss();
    if (now.rss > r.peak.rss) Object.assign(r, { peak: now, peakVersion: version, peakHeap: process.memoryUsage().heapUsed / 2 ** 20 });
  };
  let busy = Promise.resolve();
  process.on("message", (m) => {
    const changes = m as Change[] | null;
    busy = busy.then(async () => {
      if (changes === null) {
        await tree.flush();
        Object.assign(r, { latest: tree.version, size: tree.size });
        tree.close();
        send(r);
        process.disconnect();
        return;
      }
      const t0 = process.hrtime.bigint();
      for (const c of changes) {
        if (!c.delete) tree.set(c.key, c.value!);
        else if (!tree.remove(c.key)) throw new Error("bench: remove of a live key found nothing");
      }
      const t1 = process.hrtime.bigint();
      sample(tree.version + 1);
      const t2 = process.hrtime.bigint();
      tree.commit();
      const t3 = process.hrtime.bigint();
      sample(tree.version);
      send(Number(t1 - t0 + (t3 - t2)));
    });
  });
}

async function reader(dir: string, seed: number, stores: string[]): Promise<void> {
  const trees = stores.map((s) => Tree.openReadOnly(join(dir, s)));
  const plains = LAYOUTS.map((l) => stores.map((s) => plainDb(join(dir, `plain-${s}-${l.replace(" ", "-")}.sqlite`), true).prepare("SELECT value FROM kv WHERE key = ? AND version <= ? ORDER BY version DESC LIMIT 1").pluck()));
  const facts: Fact[] = [];
  let stop = false;
  process.on("message", (m) => (m === "stop" ? (stop = true) : facts.push(...(m as Fact[]))));
  process.on("disconnect", () => (stop = true));
  while (facts.length === 0) await tick();
  send("ready");
  const r: ReaderResult = { reads: 0, ms: 0, plain: { rowid: { reads: 0, ms: 0 }, "without rowid": { reads: 0, ms: 0 } }, mismatches: 0, errors: 0 };
  const rng = new Rng(seed);
  const got: Array<Uint8Array | undefined> = [];
  for (let batch = 0; !stop; batch++) {
    const picked = Array.from({ length: 100 }, () => facts[rng.int(facts.length)]!);
    const floor = batch % 10 === 9 ? LAYOUTS[(batch / 10) % 2 | 0]! : undefined;
    const t0 = performance.now();
    for (let i = 0; i < picked.length; i++) {
      const f = picked[i]!;
      try {
        got[i] = floor === undefined ? trees[f.s]!.at(f.v).get(f.k) : ((plains[LAYOUTS.indexOf(floor)]![f.s]!.get(f.k, f.v) as Uint8Array | null) ?? undefined);
      } catch (e) {
        r.errors++;
        r.firstError ??= e instanceof Error ? e.message : String(e);
        got[i] = undefined;
      }
    }
    const ms = performance.now() - t0;
    const into = floor === undefined ? r : r.plain[floor];
    into.reads += picked.length;
    into.ms += ms;
    picked.forEach((f, i) => {
      const v = got[i];
      if (f.h !== (v === undefined ? null : hash("sha256", v, "hex"))) r.mismatches++;
    });
    await tick();
  }
  for (const t of trees) t.close();
  send(r);
  process.disconnect();
}

const [role, dir, ...rest] = process.argv.slice(2);
if (role === "grow") grow(dir!, rest[0] as OpenOptions["durability"]);
else if (role === "reader") await reader(dir!, Number(rest[0]), rest.slice(1));
else throw new Error(`bench child: unknown role ${role}`);
