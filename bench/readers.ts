/**
 * Readers: the writer's throughput on the three-store mixed profile (values ÷10) while three reader processes
 * (bench/child.ts) loop over `at(v).get` of kept versions, against the writer alone, each phase from an identical
 * copy of the loaded stores; a third phase runs the readers at nice 19 (context: it tells CPU sharing on a small
 * machine apart from interference inside SQLite). After each commit the writer writes the version's rows to plain
 * versioned tables in both layouts, which one reader batch in ten reads instead (the floor of the readers' rate),
 * and sends the readers facts of that version (a key's last change in it), so that every read is checked. Both
 * happen untimed and in every phase alike.
 * @module
 */
import { hash } from "node:crypto";
import { cpSync } from "node:fs";
import { setPriority } from "node:os";
import { join } from "node:path";
import type { Fact, ReaderResult } from "./child.js";
import { Child } from "./child-process.js";
import { fasterPlain, layoutFile, LAYOUTS, perLayout, Plain, type Layout } from "./floors.js";
import { floorOf, type Bench } from "./report.js";
import { load, replay, scaled, skip, treeSubject } from "./subjects.js";
import { gc, int, median, sum } from "./timing.js";
import { MIXED, Workload, type Change } from "./workload.js";

const SEED = 31;
const sha = (v: Uint8Array): string => hash("sha256", v, "hex");

/** Facts of one version: up to 12 keys per store, each key's last change in it. */
function factsOf(version: number, groups: readonly Change[][]): Fact[] {
  return groups.flatMap((g, s) => {
    const last = [...new Map(g.map((c) => [Buffer.from(c.key).toString("latin1"), c])).values()].slice(0, 12);
    return last.map((c) => ({ s, k: c.key, v: version, h: c.delete ? null : sha(c.value!) }));
  });
}

export async function readers(b: Bench): Promise<void> {
  const versions = b.q(15, 40);
  const profiles = scaled(MIXED, { initialSize: b.q(5_000, 35_000), values: 10 });
  const names = new Workload(profiles, SEED).storeNames;
  const dir = b.dir("readers");
  const template = join(dir, "template");
  const plainsIn = (d: string): Plain[][] =>
    LAYOUTS.map((l) => names.map((s) => new Plain(layoutFile(d, `plain-${s}`, l), l, true)));
  b.log(`loading the mixed profile (values ÷10), ${int(profiles[0]!.initialSize)} keys × 3 stores`);
  const w = new Workload(profiles, SEED);
  const trees = treeSubject(template, names);
  const plains = plainsIn(template);
  await load(w, [trees, { put: (i, c) => plains.forEach((p) => p[i]!.put(c, 1)), commit: () => {}, close: () => {} }]);
  // Facts of version 1, so that readers have something to read from the start.
  const first = names.flatMap((n, s) => {
    const keys = Array.from({ length: 400 }, (_, i) => w.liveKeys(n)[(i * 7919) % w.liveCount(n)]!);
    return keys.map((k) => ({ s, k, v: 1, h: sha(trees.trees[s]!.get(k)!) }));
  });
  trees.close();
  plains.flat().forEach((p) => p.db.close());

  type Phase = { ops: number; ns: number[]; results: ReaderResult[] };
  const phase = async (mode: "alone" | "readers" | "nice"): Promise<Phase> => {
    b.log(`${versions} versions, ${mode === "alone" ? "writer alone" : `3 readers${mode === "nice" ? " at nice 19" : ""}`}`);
    gc();
    const d = join(dir, mode);
    cpSync(template, d, { recursive: true });
    const s = treeSubject(d, names);
    const ps = plainsIn(d);
    const reader = (i: number): Child => new Child("reader", [d, String(SEED * 100 + i), ...names]);
    const children = mode === "alone" ? [] : [0, 1, 2].map(reader);
    try {
      for (const c of children) {
        if (mode === "nice") setPriority(c.pid, 19);
        await c.ask(first); // answers "ready"
      }
      const t = await replay(b, skip(new Workload(profiles, SEED), 0), versions, [s], (groups, v) => {
        // The plain rows first: a reader may read a fact's version from them as soon as it has the fact.
        ps.forEach((p) => groups.forEach((g, i) => p[i]!.put(g, v + 2)));
        children.forEach((c) => c.send(factsOf(v + 2, groups)));
      });
      const results = await Promise.all(children.map((c) => c.ask<ReaderResult>("stop")));
      return { ops: sum(t.ops), ns: t.ns[0]!, results };
    } finally {
      children.forEach((c) => c.kill());
      s.close();
      ps.flat().forEach((p) => p.db.close());
    }
  };
  const [alone, shared, niced] = [await phase("alone"), await phase("readers"), await phase("nice")];

  const writer = (p: Phase): number => p.ops / (sum(p.ns) / 1e9);
  const perVersion = (p: Phase): string => `per-version median ${int(median(p.ns) / 1e6)} ms`;
  const floor = floorOf("writer alone, same versions, same store copy", writer(alone));
  const label = `writer, mixed (values ÷10), ${versions} versions × ~${int(alone.ops / versions)} changes, 3 reader processes`;
  b.row(label, writer(shared), "ops/s", floor, { target: 1.25, note: `${perVersion(shared)}; alone ${perVersion(alone)}` });
  b.row(`${label} at nice 19`, writer(niced), "ops/s", floor, { note: `context; ${perVersion(niced)}` });
  const reads = (rs: ReaderResult[], l?: Layout): number =>
    sum(rs.map((r) => (l === undefined ? r : r.plain[l])).map((x) => x.reads / (x.ms / 1000)));
  const what = "newest row ≤ v of the key, 1 batch in 10, same processes";
  b.row("readers: at(v).get of kept versions, 3 processes while the writer runs", reads(shared.results), "reads/s",
    fasterPlain(perLayout((l) => reads(shared.results, l)), "reads/s", what),
    { note: `${int(sum(shared.results.map((r) => r.reads)))} reads; at nice 19 ${int(reads(niced.results))} reads/s` });
  const all = [...shared.results, ...niced.results];
  const checked = sum(all.map((r) => r.reads + r.plain.rowid.reads + r.plain["without rowid"].reads));
  const firstError = all.find((r) => r.firstError)?.firstError;
  const errors = `${sum(all.map((r) => r.errors))} threw${firstError === undefined ? "" : ` (first: ${firstError})`}`;
  const note = `each against the sha256 (or absence) the writer sent; ${errors}`;
  b.row("readers: reads that disagree with the writer (both reader phases)", sum(all.map((r) => r.mismatches)), "reads",
    floorOf("reads checked", checked), { target: 0, note });
}
