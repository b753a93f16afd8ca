/**
 * In memory, `Tree.memory()`: load 1M keys (quick: 100k) of 56 bytes with 100-byte values, commit versions of 2,000
 * changes (50 % updates, 25 % creates, 25 % deletes) against the sha256 floor (the same preimages by count and
 * length, see `HashCounter`), the share of those commits spent in garbage collection, and get against `Map.get`.
 * Older versions are pruned after each commit, as an application would, so retained history is not measured.
 * @module
 */
import { hash } from "node:crypto";
import { sha256 as nobleSha256 } from "@noble/hashes/sha2.js";
import { Tree } from "../src/index.js";
import { consume, gc, GcWatch, HashCounter, median, rawHash, sum, timeNs, type Bench } from "./harness.js";
import { Rng } from "./workload.js";

const KEY = 56;
const VALUE = 100;
const CHANGES = 2_000;
const WARMUP = 5;

export async function core(b: Bench): Promise<void> {
  const keys = b.q(100_000, 1_000_000);
  const versions = b.q(30, 50);
  const rng = new Rng(1);
  const bytes = (n: number): Uint8Array => {
    const x = new Uint8Array(n);
    rng.fill(x);
    return x;
  };
  /** Median ns per call of each function, over 9 interleaved rounds. */
  const perCall = (fns: Array<() => unknown>, before?: (fn: number) => void): number[] => {
    const xs = fns.map((): number[] => []);
    for (let r = 0; r < 9; r++) fns.forEach((f, i) => (before?.(i), xs[i]!.push(timeNs(() => { for (let n = 0; n < 20_000; n++) consume(f()); }) / 20_000)));
    return xs.map(median);
  };
  const counter = new HashCounter();

  b.log("sha256 context");
  const msg = bytes(100);
  const [buffer, latin1, noble] = perCall([() => rawHash("sha256", msg, "buffer"), () => rawHash("sha256", msg, "latin1"), () => nobleSha256(msg)]);
  const sha = "sha256 of 100 B, node:crypto hash() → Buffer";
  b.row({ name: sha, value: buffer!, unit: "ns", floor: "@noble/hashes sha256", floorValue: noble!, note: "context: node:crypto is what the tree hashes with" });
  b.row({ name: sha, value: buffer!, unit: "ns", floor: "node:crypto hash() → latin1 string", floorValue: latin1!, note: "context: a string result skips the Buffer's external allocation" });
  const [plain, wrapped] = perCall([() => hash("sha256", msg, "binary"), () => hash("sha256", msg, "binary")], (i) => (i === 0 ? counter.uninstall() : counter.install()));
  counter.uninstall();
  counter.floorNs();
  b.row({ name: "sha256 with the counting wrapper", value: wrapped!, unit: "ns", floor: "unwrapped", floorValue: plain!, note: "the wrapper stays inside the load and commits measured below: a conservative bias" });

  b.log(`loading ${keys.toLocaleString("en-US")} keys, a commit every 10,000`);
  gc();
  const tree = Tree.memory();
  const live: Uint8Array[] = [];
  const load = { ns: 0, floorNs: 0, calls: 0 };
  counter.install();
  for (let done = 0; done < keys; done += 10_000) {
    const batch = Array.from({ length: Math.min(10_000, keys - done) }, () => [bytes(KEY), bytes(VALUE)] as const);
    load.ns += timeNs(() => (batch.forEach(([k, v]) => tree.set(k, v)), tree.commit()));
    load.calls += counter.calls;
    load.floorNs += counter.floorNs();
    if (tree.version > 1) await tree.prune(tree.version - 1);
    for (const [k] of batch) live.push(k);
  }
  const floor = "sha256 of the same preimages (count, lengths)";
  b.row({ name: `load ${keys.toLocaleString("en-US")} keys (56 B / 100 B), a commit every 10,000`, value: keys / (load.ns / 1e9), unit: "keys/s", floor, floorValue: keys / (load.floorNs / 1e9), note: `${(load.calls / keys).toFixed(2)} sha256 calls per key` });
  gc();
  const mem = process.memoryUsage();
  b.row({ name: "memory after the load (heap + external, latest version)", value: (mem.heapUsed + mem.external) / 2 ** 20, unit: "MiB", floor: "raw key + value bytes", floorValue: (keys * (KEY + VALUE)) / 2 ** 20, note: `rss ${(mem.rss / 2 ** 20).toFixed(0)} MiB` });

  b.log(`${WARMUP} + ${versions} versions of ${CHANGES} changes`);
  const gcWatch = new GcWatch();
  const m = { apply: [] as number[], commit: [] as number[], floor: [] as number[], calls: [] as number[], windows: [] as Array<[number, number]> };
  for (let v = 0; v < WARMUP + versions; v++) {
    const kinds = Array.from({ length: CHANGES }, (_, i): number => (i < CHANGES / 2 ? 0 : i < (CHANGES * 3) / 4 ? 1 : 2));
    for (let i = kinds.length - 1; i > 0; i--) {
      const j = rng.int(i + 1);
      [kinds[i], kinds[j]] = [kinds[j]!, kinds[i]!];
    }
    const ops = kinds.map((k): [Uint8Array, Uint8Array | undefined] => {
      if (k === 0) return [live[rng.int(live.length)]!, bytes(VALUE)];
      if (k === 1) return [live[live.push(bytes(KEY)) - 1]!, bytes(VALUE)];
      const i = rng.int(live.length);
      const key = live[i]!;
      live[i] = live[live.length - 1]!;
      live.pop();
      return [key, undefined];
    });
    const t0 = performance.now();
    const apply = timeNs(() => {
      for (const [k, value] of ops) if (value !== undefined) tree.set(k, value);
      else if (!tree.remove(k)) throw new Error("bench: remove of a live key found nothing");
    });
    const commit = timeNs(() => tree.commit());
    const t1 = performance.now();
    const calls = counter.calls;
    if (calls === 0) throw new Error("bench: the tree made no node:crypto hash() calls, so the sha256 floor cannot count them");
    const floorNs = counter.floorNs();
    await tree.prune(tree.version - 1);
    if (v < WARMUP) continue;
    m.apply.push(apply);
    m.commit.push(commit);
    m.floor.push(floorNs);
    m.calls.push(calls);
    m.windows.push([t0, t1]);
  }
  counter.uninstall();
  if (tree.size !== live.length) throw new Error(`bench: the tree has ${tree.size} keys, expected ${live.length}`);
  const work = m.apply.map((a, i) => a + m.commit[i]!);
  const ms = (ns: number): number => ns / 1e6;
  b.row({ name: `in-memory commit, ${versions} versions × ${CHANGES.toLocaleString("en-US")} changes on ${keys.toLocaleString("en-US")} keys`, value: (versions * CHANGES) / (sum(work) / 1e9), unit: "ops/s", floor, floorValue: (versions * CHANGES) / (sum(m.floor) / 1e9), target: 2.5, note: "set/remove + commit, GC pauses included" });
  const share = (await gcWatch.share(m.windows)) * 100;
  b.row({ name: "garbage collection share of those commits", value: share, unit: "%", floor: "10 % (target share)", floorValue: 10, target: 1, note: "PerformanceObserver 'gc' entries starting inside the timed set/remove + commit, over their wall time" });
  b.row({ name: "  set/remove + commit per version, median", value: ms(median(work)), unit: "ms", floor, floorValue: ms(median(m.floor)) });
  b.row({ name: "  of which set/remove", value: ms(median(m.apply)), unit: "ms", floor, floorValue: ms(median(m.floor)) });
  b.row({ name: "  of which commit()", value: ms(median(m.commit)), unit: "ms", floor, floorValue: ms(median(m.floor)) });
  b.row({ name: "  sha256 calls per version, median", value: median(m.calls), unit: "calls", floor: "changes per version", floorValue: CHANGES, note: `${CHANGES * 0.75} value + ${CHANGES * 0.75} leaf hashes, the rest inner nodes` });

  b.log("get: tree vs Map");
  gc();
  const latin = (k: Uint8Array): string => Buffer.from(k.buffer, k.byteOffset, k.byteLength).toString("latin1");
  const map = new Map(live.map((k) => [latin(k), tree.get(k)!]));
  const samples = Array.from({ length: 220 }, () => Array.from({ length: 1_000 }, () => live[rng.int(live.length)]!));
  const strings = samples.map((ks) => ks.map(latin));
  const batch = <K>(ks: K[], get: (k: K) => Uint8Array | undefined): number => {
    let found = 0;
    const ns = timeNs(() => ks.forEach((k) => (found += get(k) === undefined ? 0 : 1)));
    if (found !== ks.length) throw new Error("bench: a get of a live key found nothing");
    return ns / ks.length;
  };
  const g = { tree: [] as number[], map: [] as number[], convert: [] as number[] };
  samples.forEach((ks, s) => {
    const t = batch(ks, (k) => tree.get(k));
    const mp = batch(strings[s]!, (k) => map.get(k));
    const c = batch(ks, (k) => map.get(latin(k)));
    if (s >= 20) g.tree.push(t), g.map.push(mp), g.convert.push(c);
  });
  const mapFloor = `Map<string, Uint8Array>.get, ${live.length.toLocaleString("en-US")} latin1 keys (converted beforehand)`;
  b.row({ name: "in-memory get, random live key (median of 200 × 1,000)", value: median(g.tree), unit: "ns", floor: mapFloor, floorValue: median(g.map), target: 5 });
  b.row({ name: "  context: Map.get with the key's latin1 conversion", value: median(g.convert), unit: "ns", floor: mapFloor, floorValue: median(g.map) });
  tree.close();
}
