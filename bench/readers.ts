/**
 * Readers: the writer's throughput on the three-store mixed profile (values ÷10) while three reader processes
 * (bench/child.ts) loop over `at(v).get` of kept versions, against the writer alone, each phase from an identical
 * copy of the loaded stores; a third phase runs the readers at nice 19 (context: it tells CPU sharing on a small
 * machine apart from interference inside SQLite). After each commit the writer sends the readers facts of that
 * version (a key's last change in it), so that every read is checked, and writes the version's rows to plain
 * versioned tables in both layouts, which one reader batch in ten reads instead: the floor of the readers' rate.
 * Both happen untimed and in every phase alike.
 * @module
 */
import { hash } from "node:crypto";
import { setPriority } from "node:os";
import { join } from "node:path";
import type { Fact, ReaderResult } from "./child.js";
import { Child, copyDir, fasterPlain, gc, LAYOUTS, load, median, perLayout, PlainVersions, replay, skip, sum, treeSubject, type Bench, type Layout } from "./harness.js";
import { MIXED, Workload, type Change } from "./workload.js";

const SEED = 31;
const READERS = 3;

/** Facts of one version: up to 12 keys per store, each key's last change in it. */
function factsOf(version: number, groups: readonly Change[][]): Fact[] {
  return groups.flatMap((g, s) => {
    const last = new Map(g.map((c) => [Buffer.from(c.key).toString("latin1"), c]));
    return [...last.values()].slice(0, 12).map((c) => ({ s, k: c.key, v: version, h: c.delete ? null : hash("sha256", c.value!, "hex") }));
  });
}

export async function readers(b: Bench): Promise<void> {
  const versions = b.q(15, 40);
  const profiles = MIXED.map((p) => ({ ...p, initialSize: b.q(5_000, p.initialSize), valueMean: p.valueMean / 10, valueStdDev: p.valueStdDev / 10 }));
  const names = new Workload(profiles, SEED).storeNames;
  const dir = b.dir("readers");
  const template = join(dir, "template");
  const plainsIn = (d: string): PlainVersions[][] => LAYOUTS.map((l) => names.map((s) => new PlainVersions(join(d, `plain-${s}-${l.replace(" ", "-")}.sqlite`), l)));
  b.log(`loading the mixed profile (values ÷10), ${profiles[0]!.initialSize.toLocaleString("en-US")} keys × 3 stores`);
  const w = new Workload(profiles, SEED);
  const trees = treeSubject("template", template, names);
  const plains = plainsIn(template);
  await load(w, [trees, { name: "plain", put: (i, c) => plains.forEach((p) => p[i]!.put(c, 1)), commit: () => undefined, close: () => undefined }]);
  // Facts of version 1, so that readers have something to read from the start.
  const first: Fact[] = names.flatMap((n, s) => {
    const keys = w.liveKeys(n);
    return Array.from({ length: 400 }, (_, i) => keys[(i * 7919) % keys.length]!).map((k) => ({ s, k, v: 1, h: hash("sha256", trees.trees[s]!.get(k)!, "hex") }));
  });
  trees.close();
  plains.flat().forEach((p) => p.db.close());

  const phase = async (mode: "alone" | "readers" | "nice"): Promise<{ ops: number; ns: number[]; results: ReaderResult[] }> => {
    b.log(`${versions} versions, ${mode === "alone" ? "writer alone" : `${READERS} readers${mode === "nice" ? " at nice 19" : ""}`}`);
    gc();
    const d = join(dir, mode);
    copyDir(template, d);
    const s = treeSubject(mode, d, names);
    const ps = plainsIn(d);
    const children = mode === "alone" ? [] : Array.from({ length: READERS }, (_, i) => new Child("reader", [d, String(SEED * 100 + i), ...names]));
    try {
      for (const c of children) {
        if (mode === "nice") setPriority(c.pid!, 19);
        await c.ask(first);
      }
      const t = await replay(skip(new Workload(profiles, SEED), 0), versions, [s], (groups, v) => {
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

  const opsRate = (p: typeof alone): number => p.ops / (sum(p.ns) / 1e9);
  const floor = "writer alone, same versions, same store copy";
  const label = `writer, mixed (values ÷10), ${versions} versions × ~${Math.round(alone.ops / versions).toLocaleString("en-US")} changes`;
  const perVersion = (p: typeof alone): string => `${(median(p.ns) / 1e6).toFixed(0)} ms`;
  b.row({ name: `${label}, with ${READERS} reader processes`, value: opsRate(shared), unit: "ops/s", floor, floorValue: opsRate(alone), target: 1.25, note: `per-version median ${perVersion(shared)} vs ${perVersion(alone)} alone` });
  b.row({ name: `${label}, with ${READERS} reader processes at nice 19`, value: opsRate(niced), unit: "ops/s", floor, floorValue: opsRate(alone), note: `context; per-version median ${perVersion(niced)}` });
  const readRate = (rs: ReaderResult[], layout?: Layout): number => sum(rs.map((r) => (layout === undefined ? r : r.plain[layout])).map((x) => (x.ms > 0 ? x.reads / (x.ms / 1000) : 0)));
  const floors = perLayout((l) => readRate(shared.results, l));
  b.row({ name: `readers: at(v).get of kept versions, ${READERS} processes while the writer runs`, value: readRate(shared.results), unit: "reads/s", ...fasterPlain(floors, "reads/s", "newest row ≤ v of (key, version), same processes, 1 batch in 10"), note: `${sum(shared.results.map((r) => r.reads)).toLocaleString("en-US")} tree reads; at nice 19 ${readRate(niced.results).toFixed(0)} reads/s` });
  const all = [...shared.results, ...niced.results];
  const firstError = all.find((r) => r.firstError !== undefined)?.firstError;
  b.row({ name: "readers: reads that disagree with the writer (both reader phases)", value: sum(all.map((r) => r.mismatches)), unit: "reads", floor: "reads checked", floorValue: sum(all.map((r) => r.reads + r.plain.rowid.reads + r.plain["without rowid"].reads)), target: 0, note: `every read checked against the value's sha256 (or absence) the writer sent; ${sum(all.map((r) => r.errors))} threw${firstError === undefined ? "" : ` (first: ${firstError})`}` });
}
