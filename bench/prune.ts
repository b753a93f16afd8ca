/**
 * The prune section.
 *
 * 1. Commit latency while a background `tree.prune(v)` removes 1,000 versions (quick: 200), against the same versions
 *    committed from an identical copy of the store without pruning. The profile is the three-store mixed profile at
 *    an eighth of its op counts and a tenth of its value lengths (building 1,000 full mixed versions would take
 *    longer than this whole bench may run); the three stores are pruned one after another, as one background job.
 * 2. Store size over 5,000 versions (quick: 500) of a small steady-state profile (a bank-like store of 10,000 keys,
 *    50 updates + deletes a version, no growth) with `keepRecent: 100`: the size must level off. The final size is
 *    compared with a fresh store holding the same 100 versions: `Tree.import` of the oldest kept version's export,
 *    then the 99 later versions committed on top.
 * @module
 */
import { join } from "node:path";
import { Tree } from "../src/index.js";
import { equalBytes } from "../src/base/bytes.js";
import { maybeGc, median, percentile, sum, timeNs, type Report } from "./report.js";
import { applyToTree, byStore, commitVersion, copyStore, dirBytes, loadInitial, mib, openStores, removeDir, scaleOps, scaleValues, scratchDir, tick, withInitialSize } from "./stores.js";
import { BANK, MIXED, Workload, type Change, type StoreProfile } from "./workload.js";

const SECTION = "prune";
const MIXED_SEED = 21;
const SIZE_SEED = 22;

/** Options of {@link runPrune}. */
export interface PruneBenchOptions {
  quick: boolean;
}

export async function runPrune(report: Report, opts: PruneBenchOptions): Promise<void> {
  const root = scratchDir(SECTION);
  try {
    await latencyUnderPrune(report, join(root, "latency"), opts.quick);
    maybeGc();
    await sizeOverTime(report, join(root, "size"), opts.quick);
  } finally {
    removeDir(root);
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// 1: commit latency with a prune running

interface Phase {
  /** Per-version commit work (set/remove + commit of the three stores), ns. */
  ns: number[];
  /** Whether the prune was still running when each version's commit finished. */
  overlapped: boolean[];
  pruneMs: number;
  pruned: number;
}

async function latencyUnderPrune(report: Report, dir: string, quick: boolean): Promise<void> {
  const history = quick ? 200 : 1_000;
  const measured = quick ? 60 : 300;
  let profiles = scaleValues(scaleOps(MIXED, 8), 10);
  if (quick) profiles = withInitialSize(profiles, 5_000);
  const names = new Workload(profiles, MIXED_SEED).storeNames;
  report.log(`[${SECTION}] building ${history} versions of the mixed profile (ops ÷8, values ÷10)`);
  const build = join(dir, "build");
  let buildNs = 0;
  {
    const w = new Workload(profiles, MIXED_SEED);
    const trees = openStores(build, names);
    loadInitial(w, names, trees);
    for (let v = 2; v <= history; v++) {
      const groups = byStore(names, w.nextVersion());
      buildNs += timeNs(() => commitVersion(trees, groups));
      if (v % 250 === 0) report.log(`[${SECTION}]   v${v}, ${(buildNs / 1e9).toFixed(0)} s`);
    }
    for (const t of trees) t.close();
  }

  const phase = async (withPrune: boolean): Promise<Phase> => {
    report.log(`[${SECTION}] ${measured} versions ${withPrune ? `while prune(${history}) runs` : "without pruning"}`);
    maybeGc();
    const phaseDir = join(dir, withPrune ? "pruned" : "plain");
    for (const n of names) copyStore(join(build, n), join(phaseDir, n));
    const w = new Workload(profiles, MIXED_SEED);
    for (const c of w.initial()) void c;
    for (let v = 2; v <= history; v++) w.nextVersion();
    const trees = openStores(phaseDir, names);
    const r: Phase = { ns: [], overlapped: [], pruneMs: 0, pruned: 0 };
    let running = false;
    let pruning: Promise<void> = Promise.resolve();
    try {
      for (let v = 0; v < measured; v++) {
        const groups = byStore(names, w.nextVersion());
        r.ns.push(
          timeNs(() => commitVersion(trees, groups)),
        );
        r.overlapped.push(running);
        if (withPrune && v === 0) {
          // Started once the first measured version is committed, so that `history` is not the latest version.
          running = true;
          const t0 = performance.now();
          pruning = (async () => {
            for (const t of trees) r.pruned += (await t.prune(history)).pruned;
            r.pruneMs = performance.now() - t0;
            running = false;
          })();
        }
        // The event loop must turn for the prune's steps to be scheduled, as it would in a node between blocks.
        await tick();
      }
      await pruning;
    } finally {
      for (const t of trees) t.close();
    }
    removeDir(phaseDir);
    return r;
  };
  const base = await phase(false);
  const pruned = await phase(true);
  removeDir(build);

  // Compare the versions committed while the prune ran with the same versions of the run without it.
  const idx = pruned.overlapped.map((o, i) => (o ? i : -1)).filter((i) => i >= 0);
  const during = idx.length >= 20 ? idx : pruned.ns.map((_, i) => i);
  const a = during.map((i) => pruned.ns[i]! / 1e6);
  const b = during.map((i) => base.ns[i]! / 1e6);
  const overlapNote =
    `${idx.length} of ${measured} measured versions committed while the prune ran (${(pruned.pruneMs / 1000).toFixed(1)} s, ${pruned.pruned} version rows over 3 stores)` +
    (during === idx ? "; compared with the same versions of the run without pruning" : "; too few overlapped, so all versions are compared");
  const label = `mixed (ops ÷8, values ÷10, ~${Math.round(countPerVersion(profiles))} changes/version)`;
  report.add({
    section: SECTION,
    name: `commit latency p50 while prune(${history}) runs, ${label}`,
    value: percentile(a, 0.5),
    unit: "ms",
    floorName: "same versions, same store copy, no prune",
    floorValue: percentile(b, 0.5),
    note: overlapNote,
  });
  report.add({
    section: SECTION,
    name: `commit latency p99 while prune(${history}) runs, ${label}`,
    value: percentile(a, 0.99),
    unit: "ms",
    floorName: "same versions, same store copy, no prune",
    floorValue: percentile(b, 0.99),
    target: 1.25,
  });
  report.add({
    section: SECTION,
    name: `prune of ${history} versions × 3 stores, in the background`,
    value: pruned.pruneMs / 1000,
    unit: "s",
    floorName: `commit work that built those ${history} versions`,
    floorValue: buildNs / 1e9,
    note: `context; median commit while pruning ${median(a).toFixed(1)} ms vs ${median(b).toFixed(1)} ms; total ${sum(a).toFixed(0)} vs ${sum(b).toFixed(0)} ms`,
  });
}

function countPerVersion(profiles: readonly StoreProfile[]): number {
  let n = 0;
  for (const p of profiles) n += p.changesPerVersion + Math.trunc(p.deleteFraction * p.changesPerVersion) + (p.growthPerVersion ?? 0);
  return n;
}

// ---------------------------------------------------------------------------------------------------------------------
// 2: store size with keepRecent

async function sizeOverTime(report: Report, dir: string, quick: boolean): Promise<void> {
  const versions = quick ? 500 : 5_000;
  const every = quick ? 50 : 250;
  const keep = 100;
  const profile: StoreProfile = { ...BANK, initialSize: 10_000, changesPerVersion: 50, growthPerVersion: 0 };
  report.log(`[${SECTION}] ${versions} versions with keepRecent ${keep} (10,000 keys, ~62 changes a version)`);
  const store = join(dir, "store");
  const w = new Workload([profile], SIZE_SEED);
  const tree = Tree.open(store, { keepRecent: keep });
  const recent: Change[][] = [];
  /** [version, database bytes, WAL bytes]. */
  const series: Array<[number, number, number]> = [];
  const file = join(store, "iavl.sqlite");
  let latest: number;
  let hash: Uint8Array;
  let kept: number;
  const t0 = performance.now();
  try {
    applyToTree(tree, [...w.initial()]);
    tree.commit();
    while (tree.version < versions) {
      const changes = w.nextVersion();
      applyToTree(tree, changes);
      tree.commit();
      recent.push(changes);
      if (recent.length > keep) recent.shift();
      await tick();
      if (tree.version % every === 0) {
        series.push([tree.version, dirBytes(file), dirBytes(`${file}-wal`)]);
        if (tree.version % (every * 4) === 0) report.log(`[${SECTION}]   v${tree.version}: ${mib(dirBytes(file))} + WAL ${mib(dirBytes(`${file}-wal`))}, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
      }
    }
    latest = tree.version;
    hash = tree.hash;
    // Settle what the policy left running, and prune to exactly `keep` versions.
    await tree.prune(latest - keep);
    kept = tree.versions().length;
  } finally {
    tree.close();
  }
  await new Promise((r) => setTimeout(r, 200)); // the pruner's worker lets go of the file
  const finalBytes = dirBytes(store);

  // Floor: a fresh store with the same versions: import of the oldest kept one, then the later ones committed.
  const oldest = latest - keep + 1;
  const fresh = join(dir, "fresh");
  {
    const src = Tree.open(store);
    let t: Tree;
    try {
      const view = src.at(oldest);
      t = await Tree.import(fresh, view.export(), { version: oldest, expectedHash: view.hash });
    } finally {
      src.close();
    }
    try {
      for (const changes of recent.slice(recent.length - (keep - 1))) {
        applyToTree(t, changes);
        t.commit();
      }
      if (t.version !== latest || !equalBytes(t.hash, hash)) throw new Error("bench: the fresh store does not end at the pruned store's hash");
    } finally {
      t.close();
    }
  }
  const freshBytes = dirBytes(fresh);

  const half = series[Math.floor((series.length - 1) / 2)]!;
  const last = series[series.length - 1]!;
  const total = (x: [number, number, number]): number => x[1] + x[2];
  const secondHalfMax = Math.max(...series.filter(([v]) => v >= half[0]).map(total));
  report.add({
    section: SECTION,
    name: `store size after ${versions.toLocaleString("en-US")} versions, keepRecent ${keep} (${kept} versions kept)`,
    value: finalBytes / 2 ** 20,
    unit: "MiB",
    floorName: `fresh store with the same ${keep} versions (import of v${oldest} + ${keep - 1} commits)`,
    floorValue: freshBytes / 2 ** 20,
    target: 2,
    note: `measured after close (database + WAL); the policy prunes in steps of ${keep / 10} versions in the background`,
  });
  report.add({
    section: SECTION,
    name: `levels off: largest size (database + WAL) in the second half (v${half[0]}–v${last[0]}) vs the size at v${half[0]}`,
    value: secondHalfMax / 2 ** 20,
    unit: "MiB",
    floorName: `size at v${half[0]}`,
    floorValue: total(half) / 2 ** 20,
    target: 1.25,
    note: `sampled every ${every} versions while open, MiB database + WAL: ${series.map(([v, d, w]) => `v${v} ${(d / 2 ** 20).toFixed(1)}+${(w / 2 ** 20).toFixed(1)}`).join(", ")}`,
  });
}
