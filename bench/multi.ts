/**
 * Several stores: the mixed profile (values ÷10) committed through a `MultiTree` (three stores at one version, a
 * commit marker, the Cosmos SDK app hash) and through three separate `Tree.open` stores, against the plain tables in
 * both layouts, all fed the same versions, interleaved.
 * @module
 */
import { join } from "node:path";
import { MultiTree } from "../src/index.js";
import { fasterPlain, LAYOUTS, perLayout } from "./floors.js";
import type { Bench } from "./report.js";
import { applyToTree, load, plainSubject, rate, replay, scaled, treeSubject, type Subject } from "./subjects.js";
import { int } from "./timing.js";
import { MIXED, Workload } from "./workload.js";

export async function multi(b: Bench): Promise<void> {
  const versions = b.q(20, 60);
  const profiles = scaled(MIXED, { initialSize: b.q(5_000, 35_000), values: 10 });
  const w = new Workload(profiles, 20_251_130);
  const names = w.storeNames;
  const dir = b.dir("multi");
  const m = MultiTree.open(join(dir, "multi"), { stores: names });
  const together: Subject = {
    put: (i, c) => applyToTree(m.tree(names[i]!), c),
    commit: () => void m.commit(),
    close: () => m.close(),
  };
  const floors = LAYOUTS.map((l) => plainSubject(dir, names, l));
  const subjects = [...floors, treeSubject(join(dir, "trees"), names), together];
  b.log(`loading ${int(profiles[0]!.initialSize)} keys × 3 stores, then ${versions} versions interleaved`);
  await load(w, subjects);
  const t = await replay(b, w, versions, subjects);
  subjects.forEach((s) => s.close());
  const floor = fasterPlain(perLayout((_, i) => rate(t, i)), "ops/s", "same changes, 1 tx/store/version");
  const label = `mixed (values ÷10), ${versions} versions`;
  b.row(`${label}: three Tree.open stores, committed one by one`, rate(t, 2), "ops/s", floor);
  b.row(`${label}: MultiTree (one version, marker, app hash)`, rate(t, 3), "ops/s", floor,
    { note: `the MultiTree has ${(rate(t, 3) / rate(t, 2)).toFixed(2)}× the throughput of the separate stores` });
}
