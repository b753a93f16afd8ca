/**
 * Pruning.
 *
 * 1. Commit latency while a background `prune(v)` removes 1,000 versions (quick: 200) of the three-store mixed
 *    profile at an eighth of its op counts and a tenth of its value lengths, against the same versions committed
 *    from an identical copy of the store without pruning. The three stores are pruned one after another.
 * 2. Store size over 5,000 versions (quick: 500) of a bank-like store of 10,000 keys, ~62 changes a version and no
 *    growth, with keepRecent 100: it must level off, and end within 2× of a fresh store holding the same 100
 *    versions (`Tree.import` of the oldest kept version's export, then the 99 later versions committed on top).
 * @module
 */
import { cpSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Tree } from "../src/index.js";
import { floorOf, type Bench, type Floor } from "./report.js";
import { applyToTree, load, replay, scaled, skip, treeSubject } from "./subjects.js";
import { bytesOf, gc, median, mib, percentile, sum } from "./timing.js";
import { BANK, MIXED, Workload, type Change } from "./workload.js";

export async function prune(b: Bench): Promise<void> {
  await latency(b);
  gc();
  await size(b);
}

async function latency(b: Bench): Promise<void> {
  const [history, measured] = [b.q(200, 1_000), b.q(60, 300)];
  const profiles = scaled(MIXED, { initialSize: b.q(5_000, 35_000), values: 10, ops: 8 });
  const names = new Workload(profiles, 21).storeNames;
  const dir = b.dir("prune");
  b.log(`building ${history} versions of the mixed profile (ops ÷8, values ÷10)`);
  const w = new Workload(profiles, 21);
  const build = treeSubject(join(dir, "build"), names);
  await load(w, [build]);
  const buildNs = sum((await replay(b, w, history - 1, [build])).ns[0]!);
  build.close();

  type Phase = { ns: number[]; overlapped: boolean[]; ms: number; pruned: number };
  const phase = async (withPrune: boolean): Promise<Phase> => {
    b.log(`${measured} versions ${withPrune ? `while prune(${history}) runs` : "without pruning"}`);
    gc();
    const d = join(dir, String(withPrune));
    cpSync(join(dir, "build"), d, { recursive: true });
    const s = treeSubject(d, names);
    const r = { overlapped: [] as boolean[], ms: 0, pruned: 0 };
    let running: Promise<void> | undefined;
    const t = await replay(b, skip(new Workload(profiles, 21), history - 1), measured, [s], (_, v) => {
      r.overlapped.push(running !== undefined);
      // Started once the first measured version is committed, so that `history` is not the latest version.
      if (!withPrune || v !== 0) return;
      const t0 = performance.now();
      running = (async () => {
        for (const tree of s.trees) r.pruned += (await tree.prune(history)).pruned;
        r.ms = performance.now() - t0;
      })().finally(() => (running = undefined));
    });
    await running;
    s.close();
    return { ns: t.ns[0]!, ...r };
  };
  const base = await phase(false);
  const pruned = await phase(true);
  // The versions committed while the prune ran, against the same versions of the run without it.
  const idx = pruned.overlapped.flatMap((o, i) => (o ? [i] : []));
  const during = idx.length >= 20 ? idx : pruned.ns.map((_, i) => i);
  const [a, c] = [during.map((i) => pruned.ns[i]! / 1e6), during.map((i) => base.ns[i]! / 1e6)];
  const floor = "same versions, same store copy, no prune";
  const label = `while prune(${history}) runs, mixed (ops ÷8, values ÷10)`;
  const note = `${idx.length} of ${measured} versions committed while the prune ran (${(pruned.ms / 1e3).toFixed(1)} s, ` +
    `${pruned.pruned} version rows, 3 stores)${during === idx ? "" : "; too few, so all versions are compared"}`;
  const p = (q: number): [number, "ms", Floor] => [percentile(a, q), "ms", floorOf(floor, percentile(c, q))];
  b.row(`commit latency p50 ${label}`, ...p(0.5), { note });
  b.row(`commit latency p99 ${label}`, ...p(0.99), { target: 1.25 });
  b.row(`prune of ${history} versions × 3 stores, in the background`, pruned.ms / 1000, "s",
    floorOf(`the commits that built those ${history} versions`, buildNs / 1e9),
    { note: `context; median commit ${median(a).toFixed(1)} ms while pruning, ${median(c).toFixed(1)} ms without` });
}

async function size(b: Bench): Promise<void> {
  const [versions, every, keep] = [b.q(500, 5_000), b.q(50, 250), 100];
  const dir = b.dir("prune-size");
  b.log(`${versions} versions with keepRecent ${keep}`);
  const w = new Workload([{ ...BANK, initialSize: 10_000, changesPerVersion: 50, growthPerVersion: 0 }], 22);
  const s = treeSubject(dir, w.storeNames, { keepRecent: keep });
  const [store, tree] = [join(dir, w.storeNames[0]!), s.trees[0]!];
  await load(w, [s]);
  const recent: Change[][] = [];
  const series: Array<[number, number]> = [];
  await replay(b, w, versions - 1, [s], (groups) => {
    if (recent.push(groups[0]!) > keep) recent.shift();
    if (tree.version % every === 0) series.push([tree.version, bytesOf(store)]);
  });
  const [latest, hash] = [tree.version, tree.hash];
  await tree.prune(latest - keep); // settles what the policy left running, to exactly `keep` versions
  const kept = tree.versions().length;
  s.close();
  await sleep(200); // the pruner's worker lets go of the file
  const finalBytes = bytesOf(store);

  const oldest = latest - keep + 1;
  const fresh = join(dir, "fresh");
  const src = Tree.open(store);
  const view = src.at(oldest);
  const t = await Tree.import(fresh, view.export(), { version: oldest, expectedHash: view.hash });
  src.close();
  for (const changes of recent.slice(1)) applyToTree(t, changes), t.commit();
  if (t.version !== latest || Buffer.compare(t.hash, hash) !== 0) throw new Error("bench: the fresh store differs");
  t.close();

  const half = series[Math.floor((series.length - 1) / 2)]!;
  const secondHalf = series.filter(([v]) => v >= half[0]).map(([, n]) => n);
  const freshFloor = floorOf(`fresh store of the same ${keep} versions (import + ${keep - 1} commits)`, mib(bytesOf(fresh)));
  const name = `store size after ${versions} versions, keepRecent ${keep} (${kept} kept)`;
  b.row(name, mib(finalBytes), "MiB", freshFloor, { target: 2, note: "store folders after close" });
  const note = `store folder every ${every} versions, MiB: ${series.map(([v, n]) => `v${v} ${mib(n).toFixed(1)}`).join(", ")}`;
  b.row(`levels off: largest size in v${half[0]}–v${latest} against the size at v${half[0]}`, mib(Math.max(...secondHalf)),
    "MiB", floorOf(`size at v${half[0]}`, mib(half[1])), { target: 1.25, note });
}
