/**
 * The "multi" section: the mixed profile committed through a `MultiTree` (three stores at one version, a commit
 * marker, the Cosmos SDK app hash) beside the same stores as three separate `Tree.open` folders, both against the
 * floor of three plain SQLite tables applying the same changes, all in the same run.
 * @module
 */
import { join } from "node:path";
import { MultiTree } from "../src/index.js";
import { maybeGc, timeNs, type Report } from "./report.js";
import { applyToTree, byStore, commitVersion, copyStore, countChanges, loadInitial, openPlains, openStores, removeDir, scaleValues, scratchDir, withInitialSize } from "./stores.js";
import { MIXED, Workload } from "./workload.js";

const SECTION = "multi";
const SEED = 20_251_130;

/** Runs the section; `quick` loads 5,000 keys per store, divides values by 10 and commits 20 versions. */
export async function runMulti(report: Report, opts: { quick: boolean }): Promise<void> {
  const profiles = opts.quick ? scaleValues(withInitialSize(MIXED, 5_000), 10) : scaleValues(MIXED, 10);
  const versions = opts.quick ? 20 : 60;
  const root = scratchDir(SECTION);
  try {
    const names = new Workload(profiles, SEED).storeNames;
    const template = join(root, "template");
    report.log(`[${SECTION}] loading ${profiles[0]!.initialSize.toLocaleString("en-US")} keys × ${names.length} stores`);
    {
      const trees = openStores(template, names);
      const plains = openPlains(template, names);
      loadInitial(new Workload(profiles, SEED), names, trees, plains);
      for (const t of trees) t.close();
      for (const p of plains) p.close();
    }
    const workload = (): Workload => {
      const w = new Workload(profiles, SEED);
      for (const c of w.initial()) void c;
      return w;
    };
    /** Times `versions` versions, each applied by `apply` and committed by `commit`; returns ops/s. */
    const phase = (apply: (groups: ReturnType<typeof byStore>) => void): number => {
      maybeGc();
      const w = workload();
      let ops = 0;
      let ns = 0;
      for (let v = 0; v < versions; v++) {
        const groups = byStore(names, w.nextVersion());
        ns += timeNs(() => apply(groups));
        ops += countChanges(groups);
      }
      return ops / (ns / 1e9);
    };

    report.log(`[${SECTION}] ${versions} versions on plain tables`);
    const plains = openPlains(template, names);
    const floor = phase((groups) => groups.forEach((g, i) => plains[i]!.apply(g)));
    for (const p of plains) p.close();

    report.log(`[${SECTION}] ${versions} versions on three Tree.open stores`);
    const separate = join(root, "separate");
    for (const n of names) copyStore(join(template, n), join(separate, n));
    const trees = openStores(separate, names);
    const single = phase((groups) => commitVersion(trees, groups));
    for (const t of trees) t.close();

    report.log(`[${SECTION}] ${versions} versions on a MultiTree`);
    // The MultiTree gets the same initial load through its own stores, committed as its version 1.
    const multi = MultiTree.open(join(root, "multi"), { stores: names });
    for (const c of new Workload(profiles, SEED).initial()) applyToTree(multi.tree(c.store), [c]);
    multi.commit();
    const together = phase((groups) => {
      groups.forEach((g, i) => applyToTree(multi.tree(names[i]!), g));
      multi.commit();
    });
    multi.close();

    const label = `mixed profile (values ÷10), ${versions} versions`;
    const floorName = "3 plain SQLite kv tables, same changes, 1 tx/store/version";
    report.add({ section: SECTION, name: `${label}: three Tree.open stores, committed one by one`, value: single, unit: "ops/s", floorName, floorValue: floor });
    report.add({
      section: SECTION,
      name: `${label}: MultiTree (one version for all, marker, app hash)`,
      value: together,
      unit: "ops/s",
      floorName,
      floorValue: floor,
      note: `MultiTree against the three separate stores: ${(together / single).toFixed(2)}× their throughput`,
    });
  } finally {
    removeDir(root);
  }
}
