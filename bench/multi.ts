/**
 * Several stores: the mixed profile (values ÷10) committed through a `MultiTree` (three stores at one version, a
 * commit marker, the Cosmos SDK app hash) and through three separate `Tree.open` stores, against the plain tables in
 * both layouts, all fed the same versions, interleaved.
 * @module
 */
import { join } from "node:path";
import { MultiTree } from "../src/index.js";
import { applyToTree, fasterPlain, LAYOUTS, load, perLayout, plainSubject, rate, replay, treeSubject, type Bench, type Subject } from "./harness.js";
import { MIXED, Workload } from "./workload.js";

const SEED = 20_251_130;

export async function multi(b: Bench): Promise<void> {
  const versions = b.q(20, 60);
  const profiles = MIXED.map((p) => ({ ...p, initialSize: b.q(5_000, p.initialSize), valueMean: p.valueMean / 10, valueStdDev: p.valueStdDev / 10 }));
  const w = new Workload(profiles, SEED);
  const names = w.storeNames;
  const dir = b.dir("multi");
  const floors = LAYOUTS.map((l) => plainSubject(dir, names, l));
  const trees = treeSubject("trees", join(dir, "trees"), names);
  const m = MultiTree.open(join(dir, "multi"), { stores: names });
  const together: Subject = { name: "multi", put: (i, c) => applyToTree(m.tree(names[i]!), c), commit: () => void m.commit(), close: () => m.close() };
  const subjects = [...floors, trees, together];
  b.log(`loading ${profiles[0]!.initialSize.toLocaleString("en-US")} keys × 3 stores, then ${versions} versions interleaved`);
  await load(w, subjects);
  const t = await replay(w, versions, subjects);
  subjects.forEach((s) => s.close());
  const floor = fasterPlain(perLayout((_, i) => rate(t, i)), "ops/s", "same changes, 1 tx/store/version");
  const label = `mixed (values ÷10), ${versions} versions`;
  b.row({ name: `${label}: three Tree.open stores, committed one by one`, value: rate(t, 2), unit: "ops/s", ...floor });
  b.row({ name: `${label}: MultiTree (one version, marker, app hash)`, value: rate(t, 3), unit: "ops/s", ...floor, note: `the MultiTree has ${(rate(t, 3) / rate(t, 2)).toFixed(2)}× the throughput of the separate stores` });
}
