/**
 * In memory, `Tree.memory()`: load 1M keys (quick: 100k) of 56 bytes with 100-byte values, then versions of 2,000
 * changes (50 % updates, 25 % creates, 25 % deletes) against the sha256 floor (the same preimages by count and
 * length, see `HashCounter`), the share of those commits spent in garbage collection, and get against `Map.get`.
 * Older versions are pruned after each commit, as an application would, so retained history is not measured.
 * @module
 */
import { hash } from "node:crypto";
import { sha256 as nobleSha256 } from "@noble/hashes/sha2.js";
import { Tree } from "../src/index.js";
import { HashCounter, rawHash } from "./floors.js";
import { floorOf, type Bench } from "./report.js";
import { consume, gc, GcWatch, int, median, nsPerGet, sum, timeNs } from "./timing.js";
import { Rng } from "./workload.js";

const CHANGES = 2_000;

export async function core(b: Bench): Promise<void> {
  const [keys, versions] = [b.q(100_000, 1_000_000), b.q(30, 50)];
  const rng = new Rng(1);
  const bytes = (n: number): Uint8Array => {
    const x = new Uint8Array(n);
    rng.fill(x);
    return x;
  };
  const counter = new HashCounter();
  /** Median ns per call of each function over 9 interleaved rounds; `before(i)` runs ahead of function i's round. */
  const perCall = (fns: Array<() => unknown>, before?: (i: number) => void): number[] => {
    const xs = fns.map((): number[] => []);
    for (let r = 0; r < 9; r++) {
      fns.forEach((f, i) => {
        before?.(i);
        xs[i]!.push(timeNs(() => { for (let n = 0; n < 2e4; n++) consume(f()); }) / 2e4);
      });
    }
    return xs.map(median);
  };

  const msg = bytes(100);
  const [buffer, latin1, noble] = perCall([
    () => rawHash("sha256", msg, "buffer"),
    () => rawHash("sha256", msg, "latin1"),
    () => nobleSha256(msg),
  ]) as [number, number, number];
  const name = "sha256 of 100 B, node:crypto hash() → Buffer";
  b.row(name, buffer, "ns", floorOf("@noble/hashes sha256", noble), { note: "context: the tree uses node:crypto" });
  const noBuffer = { note: "context: a string result needs no Buffer" };
  b.row(name, buffer, "ns", floorOf("node:crypto hash() → latin1 string", latin1), noBuffer);
  const install = (i: number): void => (i === 0 ? counter.uninstall() : counter.install());
  const [plain, counted] = perCall([() => hash("sha256", msg, "binary"), () => hash("sha256", msg, "binary")], install);
  counter.uninstall();
  counter.floorNs();
  const bias = "the wrapper stays inside the load and commits below: a conservative bias";
  b.row("sha256 with the counting wrapper", counted!, "ns", floorOf("unwrapped", plain!), { note: bias });

  b.log(`loading ${int(keys)} keys, a commit every 10,000`);
  gc();
  const tree = Tree.memory();
  const live: Uint8Array[] = [];
  const load = { ns: 0, floorNs: 0, calls: 0 };
  counter.install();
  for (let done = 0; done < keys; done += 10_000) {
    const batch = Array.from({ length: Math.min(10_000, keys - done) }, () => [bytes(56), bytes(100)] as const);
    load.ns += timeNs(() => (batch.forEach(([k, v]) => tree.set(k, v)), tree.commit()));
    load.calls += counter.calls;
    load.floorNs += counter.floorNs();
    if (tree.version > 1) await tree.prune(tree.version - 1);
    batch.forEach(([k]) => live.push(k));
  }
  const floor = "sha256 of the same preimages (count, lengths)";
  b.row(`load ${int(keys)} keys (56 B / 100 B), a commit every 10,000`, keys / (load.ns / 1e9), "keys/s",
    floorOf(floor, keys / (load.floorNs / 1e9)), { note: `${(load.calls / keys).toFixed(2)} sha256 calls per key` });
  gc();
  const mem = process.memoryUsage();
  b.row("memory after the load (heap + external, latest version)", (mem.heapUsed + mem.external) / 2 ** 20, "MiB",
    floorOf("raw key + value bytes", (keys * 156) / 2 ** 20), { note: `rss ${(mem.rss / 2 ** 20).toFixed(0)} MiB` });

  b.log(`5 + ${versions} versions of ${CHANGES} changes`);
  const gcWatch = new GcWatch();
  const m = { apply: [] as number[], commit: [] as number[], floor: [] as number[], calls: [] as number[] };
  const windows: Array<[number, number]> = [];
  for (let v = 0; v < 5 + versions; v++) {
    // Kinds shuffled; updates and deletes uniform among live keys. Generated outside the timing.
    const kinds = Array.from({ length: CHANGES }, (_, i): number => (i < CHANGES / 2 ? 0 : i < CHANGES * 0.75 ? 1 : 2));
    for (let i = kinds.length - 1; i > 0; i--) {
      const j = rng.int(i + 1);
      [kinds[i], kinds[j]] = [kinds[j]!, kinds[i]!];
    }
    const ops = kinds.map((k): [Uint8Array, Uint8Array | undefined] => {
      if (k !== 2) return [k === 0 ? live[rng.int(live.length)]! : live[live.push(bytes(56)) - 1]!, bytes(100)];
      const i = rng.int(live.length);
      const key = live[i]!;
      live[i] = live[live.length - 1]!;
      live.pop();
      return [key, undefined];
    });
    const t0 = performance.now();
    const apply = timeNs(() => {
      for (const [k, value] of ops) if (value !== undefined) tree.set(k, value);
      else if (!tree.remove(k)) throw new Error("bench: a remove of a live key found nothing");
    });
    const commit = timeNs(() => tree.commit());
    const t1 = performance.now();
    const calls = counter.calls;
    if (calls === 0) throw new Error("bench: the tree made no node:crypto hash() calls for the sha256 floor to count");
    const floorNs = counter.floorNs();
    await tree.prune(tree.version - 1);
    if (v < 5) continue; // warm-up
    m.apply.push(apply), m.commit.push(commit), m.floor.push(floorNs), m.calls.push(calls);
    windows.push([t0, t1]);
  }
  counter.uninstall();
  if (tree.size !== live.length) throw new Error(`bench: the tree has ${tree.size} keys, expected ${live.length}`);
  const work = m.apply.map((a, i) => a + m.commit[i]!);
  const ops = versions * CHANGES;
  b.row(`in-memory commit, ${versions} versions × ${int(CHANGES)} changes on ${int(keys)} keys`, ops / (sum(work) / 1e9),
    "ops/s", floorOf(floor, ops / (sum(m.floor) / 1e9)), { target: 2.5, note: "set/remove + commit, GC included" });
  b.row("garbage collection share of those commits", (await gcWatch.share(windows)) * 100, "%",
    floorOf("10 % (target share)", 10), { target: 1, note: "'gc' performance entries starting inside the timed work" });
  const perVersion = floorOf(floor, median(m.floor) / 1e6);
  b.row("  set/remove + commit per version, median", median(work) / 1e6, "ms", perVersion);
  b.row("  of which set/remove", median(m.apply) / 1e6, "ms", perVersion);
  b.row("  of which commit()", median(m.commit) / 1e6, "ms", perVersion);
  b.row("  sha256 calls per version, median", median(m.calls), "calls", floorOf("changes per version", CHANGES),
    { note: `${CHANGES * 0.75} value + ${CHANGES * 0.75} leaf hashes, the rest inner nodes` });

  b.log("get: the tree against a Map");
  gc();
  const latin = (k: Uint8Array): string => Buffer.from(k.buffer, k.byteOffset, k.byteLength).toString("latin1");
  const map = new Map(live.map((k) => [latin(k), tree.get(k)!]));
  const samples = Array.from({ length: 220 }, () => Array.from({ length: 1_000 }, () => live[rng.int(live.length)]!));
  const strings = samples.map((ks) => ks.map(latin));
  const g: number[][] = [[], [], []];
  samples.forEach((ks, s) => {
    const r = [nsPerGet(ks, (k) => tree.get(k)), nsPerGet(strings[s]!, (k) => map.get(k))];
    r.push(nsPerGet(ks, (k) => map.get(latin(k))));
    if (s >= 20) r.forEach((x, i) => g[i]!.push(x)); // the first 20 warm up
  });
  const mapGet = floorOf(`Map.get, ${int(live.length)} latin1 string keys`, median(g[1]!));
  b.row("in-memory get, random live key (median of 200 × 1,000)", median(g[0]!), "ns", mapGet, { target: 5 });
  b.row("  context: Map.get with the key's latin1 conversion", median(g[2]!), "ns", mapGet);
  tree.close();
}
