/**
 * Subjects, what a workload is replayed into: trees and plain tables taking one version at a time, the initial load,
 * the timed replay version by version, scaled workload profiles and skipping ahead in a workload.
 * @module
 */
import { join } from "node:path";
import { setImmediate as tick } from "node:timers/promises";
import { Tree, type OpenOptions } from "../src/index.js";
import { layoutFile, Plain, type Layout } from "./floors.js";
import type { Bench } from "./report.js";
import { rss, sum, timeNsAsync, type Rss } from "./timing.js";
import type { Change, StoreProfile, Workload } from "./workload.js";

/** The trees under test or a floor, taking one version at a time: `put` each store's changes, then `commit`. */
export interface Subject {
  put(store: number, changes: readonly Change[]): void;
  commit(): void | Promise<void>;
  close(): void;
}

/** Applies `changes` to a tree; a delete must find its key. */
export function applyToTree(tree: Tree, changes: readonly Change[]): void {
  for (const c of changes) {
    if (!c.delete) tree.set(c.key, c.value!);
    else if (!tree.remove(c.key)) throw new Error("bench: a tree remove of a live key found nothing");
  }
}

/** A process's resident memory at its start and at its peak, sampled around each version it commits. */
export interface PeakRss {
  base: Rss;
  peak: Rss;
  peakVersion: number;
  /** V8 heap used at the peak, MiB. */
  peakHeap: number;
}

/** A {@link PeakRss} starting now. */
export const peakRssNow = (): PeakRss => ({ base: rss(), peak: rss(), peakVersion: 0, peakHeap: 0 });

/**
 * Applies and commits one version of `changes`, sampling RSS into `m` after the changes and after the commit; the
 * set/remove + commit time in ns, the samples left out.
 */
export function timedCommit(tree: Tree, changes: readonly Change[], m: PeakRss): number {
  const sample = (version: number): void => {
    const now = rss();
    if (now.rss > m.peak.rss) Object.assign(m, { peak: now, peakVersion: version, peakHeap: process.memoryUsage().heapUsed / 2 ** 20 });
  };
  const t0 = process.hrtime.bigint();
  applyToTree(tree, changes);
  const t1 = process.hrtime.bigint();
  sample(tree.version + 1);
  const t2 = process.hrtime.bigint();
  tree.commit();
  const t3 = process.hrtime.bigint();
  sample(tree.version);
  return Number(t1 - t0 + (t3 - t2));
}

/** One `Tree.open` store per name in `dir/<name>`, committed one after another. */
export function treeSubject(dir: string, stores: readonly string[], o?: OpenOptions): Subject & { trees: Tree[] } {
  const trees = stores.map((s) => Tree.open(join(dir, s), o));
  const each = (f: (t: Tree) => unknown) => (): void => trees.forEach(f);
  return {
    trees,
    put: (i, c) => applyToTree(trees[i]!, c),
    commit: each((t) => t.commit()),
    close: each((t) => t.close()),
  };
}

/**
 * `s` with its trees flushed inside the commit of the `at`-th versions (counted from 1): the versions still landing
 * in the writer threads then count in the time of the window those versions end.
 */
export function flushingAt(s: Subject & { trees: Tree[] }, at: readonly number[]): Subject {
  let n = 0;
  return {
    ...s,
    commit: async () => {
      s.commit();
      if (at.includes(++n)) await Promise.all(s.trees.map((t) => t.flush()));
    },
  };
}

/** One plain kv table per store in `dir`, one transaction per store and version. */
export function plainSubject(dir: string, stores: readonly string[], layout: Layout): Subject & { plains: Plain[] } {
  const plains = stores.map((s) => new Plain(layoutFile(dir, `plain-${s}`, layout), layout));
  const close = (): void => plains.forEach((p) => p.db.close());
  return { plains, put: (i, c) => plains[i]!.put(c), commit: () => undefined, close };
}

/** Streams `w`'s initial load (version 1) into the subjects in batches, then commits each. */
export async function load(w: Workload, subjects: readonly Subject[]): Promise<void> {
  const pending = w.storeNames.map((): Change[] => []);
  const flush = (i: number): void => void (subjects.forEach((s) => s.put(i, pending[i]!)), (pending[i] = []));
  for (const c of w.initial()) {
    const i = w.storeNames.indexOf(c.store);
    if (pending[i]!.push(c) >= 2_000) flush(i);
  }
  pending.forEach((_, i) => flush(i));
  for (const s of subjects) await s.commit();
}

/** `profiles` with another initial size, value lengths divided by `values` and op counts by `ops`. */
export function scaled(
  profiles: readonly StoreProfile[],
  o: { initialSize?: number; values?: number; ops?: number },
): StoreProfile[] {
  const [values, ops] = [o.values ?? 1, o.ops ?? 1];
  return profiles.map((p) => ({
    ...p,
    initialSize: o.initialSize ?? p.initialSize,
    valueMean: p.valueMean / values,
    valueStdDev: p.valueStdDev / values,
    changesPerVersion: Math.max(1, Math.round(p.changesPerVersion / ops)),
    growthPerVersion: (p.growthPerVersion ?? 0) / ops,
  }));
}

/** `w` past its initial load and `n` more versions, generated only: to continue from a stored copy. */
export function skip(w: Workload, n: number): Workload {
  for (const c of w.initial()) void c;
  for (let v = 0; v < n; v++) w.nextVersion();
  return w;
}

/** Per version: its changes, and each subject's time (put + commit), ns. */
export interface Timings {
  ops: number[];
  ns: number[][];
}

/**
 * Replays `versions` versions of `w` (past its initial load) into the subjects, each subject timed apart and in
 * rotated order, so that noise hits all alike; `after` runs untimed after each version. The event loop turns between
 * versions, as in a node between blocks, so that background prunes go on.
 */
export async function replay(
  b: Bench,
  w: Workload,
  versions: number,
  subjects: readonly Subject[],
  after?: (groups: Change[][], v: number) => unknown,
): Promise<Timings> {
  const t: Timings = { ops: [], ns: subjects.map(() => []) };
  const t0 = performance.now();
  for (let v = 0; v < versions; v++) {
    const groups = w.storeNames.map((): Change[] => []);
    for (const c of w.nextVersion()) groups[w.storeNames.indexOf(c.store)]!.push(c);
    t.ops.push(sum(groups.map((g) => g.length)));
    for (let j = 0; j < subjects.length; j++) {
      const k = (v + j) % subjects.length;
      t.ns[k]!.push(await timeNsAsync(() => (groups.forEach((g, i) => subjects[k]!.put(i, g)), subjects[k]!.commit())));
    }
    await after?.(groups, v);
    await tick();
    const s = ((performance.now() - t0) / 1e3).toFixed(0);
    if ((v + 1) % Math.ceil(versions / 10) === 0) b.log(`  ${v + 1} of ${versions} versions, ${s} s`);
  }
  return t;
}

/** Changes per second of subject `s` over versions [from, to). */
export function rate(t: Timings, s: number, from = 0, to = t.ops.length): number {
  return sum(t.ops.slice(from, to)) / (sum(t.ns[s]!.slice(from, to)) / 1e9);
}
