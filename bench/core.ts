/**
 * The in-memory section: load a `Tree.memory()`, then commit throughput of mixed versions against a sha256 floor, and
 * get latency against a JS `Map`. Every figure is a ratio to a floor measured in this run.
 *
 * The hashing floor is exact, not estimated: node:crypto's `hash` is wrapped (via `syncBuiltinESMExports`, which
 * updates the binding src/tree/hash.ts imported) to count the sha256 calls of each commit and the length of each
 * preimage; the floor then hashes exactly that many preimages of exactly those lengths with the unwrapped function.
 * The wrapper's own cost stays inside the measured commit (a conservative bias); a context row measures it.
 * @module
 */
import crypto from "node:crypto";
import { syncBuiltinESMExports } from "node:module";
import { sha256 as nobleSha256 } from "@noble/hashes/sha2.js";
import { Tree } from "../src/index.js";
import { sha256 as treeSha256 } from "../src/base/hash.js";
import { consume, maybeGc, median, sum, timeNs, type Report } from "./report.js";

const SECTION = "core";
const KEY_BYTES = 56;
const VALUE_BYTES = 100;
const LOAD_BATCH = 10_000;
const CHANGES_PER_VERSION = 2_000;
const WARMUP_VERSIONS = 5;

/** Options of {@link runCore}. */
export interface CoreOptions {
  /** Keys loaded before the measurements; default 1,000,000. */
  keys: number;
  /** Measured mixed versions; default 50. */
  versions?: number;
  /** Changes per mixed version; default 2,000 (50 % updates, 25 % creates, 25 % deletes). */
  changesPerVersion?: number;
  /** Get timing samples (of 1,000 gets each); default 200. */
  getSamples?: number;
  /** Commit every this many inserts during the load; default 10,000 (older versions are pruned as it goes). */
  loadCommitEvery?: number;
  /** PRNG seed; default 1. */
  seed?: number;
}

// ---------------------------------------------------------------------------------------------------------------------
// Deterministic PRNG (sfc32)

class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    this.a = 0x9e3779b9;
    this.b = 0x243f6a88;
    this.c = 0xb7e15162;
    this.d = seed >>> 0;
    for (let i = 0; i < 16; i++) this.next();
  }

  /** Next unsigned 32-bit output. */
  next(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor((this.next() / 4294967296) * n);
  }

  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i += 4) {
      let r = this.next();
      for (let j = i; j < i + 4 && j < n; j++) {
        out[j] = r & 0xff;
        r >>>= 8;
      }
    }
    return out;
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Counting node:crypto hash

type RawHash = (algorithm: string, data: crypto.BinaryLike, outputEncoding?: string) => string | Buffer;
type Writable = { hash: RawHash };

/** The unwrapped node:crypto `hash`, captured before any wrapping: the floors call it directly. */
const rawHash = crypto.hash as unknown as RawHash;
const MAX_TRACKED_LEN = 4096;

/** sha256 calls seen while a {@link HashCounter} is installed: how many, and how many of each preimage length. */
export interface HashTally {
  calls: number;
  /** [preimage length, count, output encoding the caller asked for]. */
  sizes: Array<[number, number, string]>;
}

/** Counts the sha256 calls the tree makes, by wrapping node:crypto's `hash` (see the module header). */
export class HashCounter {
  private calls = 0;
  /** Length histograms by output encoding (the floor replays the caller's encoding: "buffer" costs an allocation). */
  private readonly hists = new Map<string, Uint32Array>();
  private readonly bigLens = new Map<string, number>();
  private installed = false;

  install(): void {
    if (this.installed) return;
    let lastEnc = "";
    let lastLens: Uint32Array = new Uint32Array(0);
    const wrapped: RawHash = (algorithm, data, outputEncoding) => {
      this.calls++;
      const enc = outputEncoding ?? "hex";
      if (enc !== lastEnc) {
        let h = this.hists.get(enc);
        if (h === undefined) this.hists.set(enc, (h = new Uint32Array(MAX_TRACKED_LEN)));
        lastEnc = enc;
        lastLens = h;
      }
      const n = typeof data === "string" ? Buffer.byteLength(data) : data.byteLength;
      if (n < MAX_TRACKED_LEN) lastLens[n]!++;
      else this.bigLens.set(`${n}:${enc}`, (this.bigLens.get(`${n}:${enc}`) ?? 0) + 1);
      return rawHash(algorithm, data, outputEncoding);
    };
    (crypto as unknown as Writable).hash = wrapped;
    syncBuiltinESMExports();
    this.installed = true;
  }

  uninstall(): void {
    if (!this.installed) return;
    (crypto as unknown as Writable).hash = rawHash;
    syncBuiltinESMExports();
    this.installed = false;
  }

  /** The tally since the last take (or install), and resets it. */
  take(): HashTally {
    const sizes: Array<[number, number, string]> = [];
    for (const [enc, h] of this.hists) {
      for (let n = 0; n < MAX_TRACKED_LEN; n++) if (h[n]! > 0) sizes.push([n, h[n]!, enc]);
      h.fill(0);
    }
    for (const [k, c] of this.bigLens) {
      const i = k.indexOf(":");
      sizes.push([Number(k.slice(0, i)), c, k.slice(i + 1)]);
    }
    const t = { calls: this.calls, sizes };
    this.calls = 0;
    this.bigLens.clear();
    return t;
  }
}

const floorBuf = new Uint8Array(Math.max(MAX_TRACKED_LEN, 1 << 16)).map((_, i) => (i * 131 + 7) & 0xff);

/**
 * Nanoseconds to sha256 the preimages of `tally` (same count, same lengths, same output encoding) with the unwrapped
 * node:crypto hash, from one hot buffer: the cost of the hashing alone, without the tree around it.
 */
export function hashFloorNs(tally: HashTally): number {
  let sink = 0;
  const ns = timeNs(() => {
    for (const [len, count, enc] of tally.sizes) {
      const src = len <= floorBuf.length ? floorBuf : new Uint8Array(len);
      for (let i = 0; i < count; i++) {
        const h = rawHash("sha256", src.subarray(0, len), enc);
        sink ^= typeof h === "string" ? h.charCodeAt(0) : h[0]!;
      }
    }
  });
  consume(sink);
  return ns;
}

function mergeTally(into: HashTally, t: HashTally): void {
  into.calls += t.calls;
  const m = new Map<string, [number, number, string]>();
  for (const e of [...into.sizes, ...t.sizes]) {
    const k = `${e[0]}:${e[2]}`;
    const prev = m.get(k);
    if (prev === undefined) m.set(k, [e[0], e[1], e[2]]);
    else prev[1] += e[1];
  }
  into.sizes = [...m.values()];
}

/** The fallback when the counter saw nothing (hash.ts no longer uses node:crypto `hash`): the brief's estimate. */
function estimatedTally(sets: number, changes: number, treeSize: number): HashTally {
  const height = Math.ceil(Math.log2(Math.max(treeSize, 2))) + 1;
  const inner = changes * Math.max(height - Math.floor(Math.log2(Math.max(changes, 1))), 1);
  return {
    calls: 2 * sets + inner,
    sizes: [
      [VALUE_BYTES, sets, "buffer"],
      [KEY_BYTES + 38, sets, "buffer"],
      [71, inner, "buffer"],
    ],
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// The section

function hex(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("hex");
}

/** ns per call of `fn` over `n` calls, median of `rounds` rounds. */
function perCallNs(n: number, rounds: number, fn: () => unknown): number {
  const xs: number[] = [];
  for (let r = 0; r < rounds; r++) {
    xs.push(
      timeNs(() => {
        for (let i = 0; i < n; i++) consume(fn());
      }) / n,
    );
  }
  return median(xs);
}

type Op = { kind: 0; key: Uint8Array; value: Uint8Array } | { kind: 1; key: Uint8Array };

/** The in-memory section (issue: "in-memory tree"): load, commit throughput, get latency. */
export async function runCore(report: Report, opts: CoreOptions): Promise<void> {
  const keys = opts.keys;
  const versions = opts.versions ?? 50;
  const changes = opts.changesPerVersion ?? CHANGES_PER_VERSION;
  const getSamples = opts.getSamples ?? 200;
  const loadBatch = opts.loadCommitEvery ?? LOAD_BATCH;
  const rng = new Rng(opts.seed ?? 1);
  const counter = new HashCounter();

  // --- sha256 context: node:crypto vs @noble/hashes, and the counting wrapper's overhead ------------------------------
  report.log(`[core] sha256 floors`);
  const msg = rng.bytes(100);
  const leafLike = rng.bytes(KEY_BYTES + 38);
  const bufR: number[] = [];
  const latinR: number[] = [];
  const nobleR: number[] = [];
  for (let r = 0; r < 7; r++) {
    bufR.push(perCallNs(50_000, 1, () => rawHash("sha256", msg, "buffer")));
    latinR.push(perCallNs(50_000, 1, () => rawHash("sha256", msg, "latin1")));
    nobleR.push(perCallNs(20_000, 1, () => nobleSha256(msg)));
  }
  const nodeNs = median(bufR);
  report.add({
    section: SECTION,
    name: "sha256 of 100 B, node:crypto hash() → Buffer",
    value: nodeNs,
    unit: "ns",
    floorName: "@noble/hashes sha256",
    floorValue: median(nobleR),
    note: "context: node:crypto hash() → Buffer is what src/tree/hash.ts calls, so it is the hashing floor below",
  });
  report.add({
    section: SECTION,
    name: "sha256 of 100 B, node:crypto hash() → Buffer",
    value: nodeNs,
    unit: "ns",
    floorName: "node:crypto hash() → latin1 string",
    floorValue: median(latinR),
    note: "context: the same digest returned as a string skips the Buffer (external ArrayBuffer) allocation",
  });
  // Interleaved rounds, so that noise on the shared cores hits both alike.
  const plainR: number[] = [];
  const wrappedR: number[] = [];
  for (let r = 0; r < 9; r++) {
    plainR.push(perCallNs(50_000, 1, () => treeSha256(leafLike)));
    counter.install();
    wrappedR.push(perCallNs(50_000, 1, () => treeSha256(leafLike)));
    counter.take();
    counter.uninstall();
  }
  const plainNs = median(plainR);
  const wrappedNs = median(wrappedR);
  report.add({
    section: SECTION,
    name: "hash.ts sha256 of 94 B, with the counting wrapper",
    value: wrappedNs,
    unit: "ns",
    floorName: "hash.ts sha256 unwrapped",
    floorValue: plainNs,
    note: `the wrapper (≈${Math.max(wrappedNs - plainNs, 0).toFixed(0)} ns/call) stays inside the measured load and commits: a conservative bias`,
  });

  // --- load ---------------------------------------------------------------------------------------------------------
  maybeGc();
  report.log(`[core] loading ${keys.toLocaleString("en-US")} keys (commit every ${loadBatch.toLocaleString("en-US")})`);
  const tree = Tree.memory();
  const live: Uint8Array[] = [];
  let loadNs = 0;
  let loadFloorNs = 0;
  let counted = true;
  const loadTally: HashTally = { calls: 0, sizes: [] };
  counter.install();
  for (let done = 0; done < keys; ) {
    const n = Math.min(loadBatch, keys - done);
    const batchKeys: Uint8Array[] = new Array<Uint8Array>(n);
    const batchValues: Uint8Array[] = new Array<Uint8Array>(n);
    for (let i = 0; i < n; i++) {
      batchKeys[i] = rng.bytes(KEY_BYTES);
      batchValues[i] = rng.bytes(VALUE_BYTES);
    }
    loadNs += timeNs(() => {
      for (let i = 0; i < n; i++) tree.set(batchKeys[i]!, batchValues[i]!);
      tree.commit();
    });
    // Old versions are dropped (untimed), as an application prunes: kept roots would only measure the GC.
    if (tree.version > 1) await tree.prune(tree.version - 1);
    let t = counter.take();
    if (t.calls === 0) {
      counted = false;
      t = estimatedTally(n, n, tree.size);
    }
    mergeTally(loadTally, t);
    loadFloorNs += hashFloorNs(t);
    for (const k of batchKeys) live.push(k);
    done += n;
    if (done % 200_000 < n) report.log(`[core]   ${done.toLocaleString("en-US")} keys, ${(loadNs / 1e9).toFixed(1)} s`);
  }
  counter.uninstall();
  const floorLabel = counted ? "sha256 floor (same calls & sizes)" : "sha256 floor (ESTIMATE: no hash counter)";
  report.add({
    section: SECTION,
    name: `load ${keys.toLocaleString("en-US")} keys (56 B/100 B), commit every ${loadBatch.toLocaleString("en-US")}`,
    value: keys / (loadNs / 1e9),
    unit: "keys/s",
    floorName: floorLabel,
    floorValue: keys / (loadFloorNs / 1e9),
    note: `${loadTally.calls.toLocaleString("en-US")} sha256 calls (${(loadTally.calls / keys).toFixed(2)} per key); load took ${(loadNs / 1e9).toFixed(1)} s`,
  });

  maybeGc();
  const mem = process.memoryUsage();
  const rawBytes = keys * (KEY_BYTES + VALUE_BYTES);
  report.add({
    section: SECTION,
    name: "memory after load (heap + external; latest version kept)",
    value: (mem.heapUsed + mem.external) / 2 ** 20,
    unit: "MiB",
    floorName: "raw key + value bytes",
    floorValue: rawBytes / 2 ** 20,
    note: `heapUsed ${(mem.heapUsed / 2 ** 20).toFixed(0)} MiB, external ${(mem.external / 2 ** 20).toFixed(0)} MiB, rss ${(mem.rss / 2 ** 20).toFixed(0)} MiB${typeof globalThis.gc === "function" ? "" : " (no --expose-gc: includes garbage)"}`,
  });

  // --- commit throughput ----------------------------------------------------------------------------------------------
  report.log(`[core] commit throughput: ${WARMUP_VERSIONS} warm-up + ${versions} versions × ${changes} changes`);
  const nUpdates = Math.round(changes * 0.5);
  const nCreates = Math.round(changes * 0.25);
  const nDeletes = changes - nUpdates - nCreates;
  const applyNs: number[] = [];
  const commitNs: number[] = [];
  const floorNs: number[] = [];
  const calls: number[] = [];
  const estimates: number[] = [];
  maybeGc();
  counter.install();
  for (let v = 0; v < WARMUP_VERSIONS + versions; v++) {
    // Generate the version's changes outside the timing: kinds shuffled, updates/deletes uniform among live keys.
    const kinds: number[] = [];
    for (let i = 0; i < nUpdates; i++) kinds.push(0);
    for (let i = 0; i < nCreates; i++) kinds.push(1);
    for (let i = 0; i < nDeletes; i++) kinds.push(2);
    for (let i = kinds.length - 1; i > 0; i--) {
      const j = rng.int(i + 1);
      const x = kinds[i]!;
      kinds[i] = kinds[j]!;
      kinds[j] = x;
    }
    const ops: Op[] = [];
    let sets = 0;
    for (const k of kinds) {
      if (k === 0) {
        ops.push({ kind: 0, key: live[rng.int(live.length)]!, value: rng.bytes(VALUE_BYTES) });
        sets++;
      } else if (k === 1) {
        const key = rng.bytes(KEY_BYTES);
        live.push(key);
        ops.push({ kind: 0, key, value: rng.bytes(VALUE_BYTES) });
        sets++;
      } else {
        const i = rng.int(live.length);
        const key = live[i]!;
        live[i] = live[live.length - 1]!;
        live.pop();
        ops.push({ kind: 1, key });
      }
    }

    const a = timeNs(() => {
      for (const op of ops) {
        if (op.kind === 0) tree.set(op.key, op.value);
        else if (!tree.remove(op.key)) throw new Error("bench: delete of a live key found nothing");
      }
    });
    const c = timeNs(() => tree.commit());
    let t = counter.take();
    if (tree.version > 1) await tree.prune(tree.version - 1);
    const est = estimatedTally(sets, changes, tree.size);
    if (t.calls === 0) {
      counted = false;
      t = est;
    }
    const f = hashFloorNs(t);
    if (v >= WARMUP_VERSIONS) {
      applyNs.push(a);
      commitNs.push(c);
      floorNs.push(f);
      calls.push(t.calls);
      estimates.push(est.calls);
    }
  }
  counter.uninstall();
  if (tree.size !== live.length) throw new Error(`bench: tree has ${tree.size} keys, expected ${live.length}`);

  const workNs = applyNs.map((x, i) => x + commitNs[i]!);
  const totalOps = versions * changes;
  const mixLabel = `${versions} versions × ${changes.toLocaleString("en-US")} changes (50 % upd, 25 % new, 25 % del)`;
  const floorName = counted ? "sha256 floor (same calls & sizes)" : "sha256 floor (ESTIMATE: no hash counter)";
  report.add({
    section: SECTION,
    name: `commit throughput, ${mixLabel}`,
    value: totalOps / (sum(workNs) / 1e9),
    unit: "ops/s",
    floorName,
    floorValue: totalOps / (sum(floorNs) / 1e9),
    target: 2,
    note: "work = set/remove + commit, summed over all versions (GC pauses included)",
  });
  report.add({
    section: SECTION,
    name: "commit work per version (set/remove + commit), median",
    value: median(workNs) / 1e6,
    unit: "ms",
    floorName,
    floorValue: median(floorNs) / 1e6,
    target: 2,
  });
  report.add({
    section: SECTION,
    name: "  of which set/remove per version, median",
    value: median(applyNs) / 1e6,
    unit: "ms",
    floorName,
    floorValue: median(floorNs) / 1e6,
  });
  report.add({
    section: SECTION,
    name: "  of which commit() (hashing) per version, median",
    value: median(commitNs) / 1e6,
    unit: "ms",
    floorName,
    floorValue: median(floorNs) / 1e6,
  });
  const medCalls = median(calls);
  const setsPerVersion = nUpdates + nCreates;
  report.add({
    section: SECTION,
    name: "sha256 calls per version, median",
    value: medCalls,
    unit: "calls",
    floorName: "changes per version",
    floorValue: changes,
    note:
      `${setsPerVersion} value hashes + ${setsPerVersion} leaf hashes + ≈${Math.max(medCalls - 2 * setsPerVersion, 0).toFixed(0)} inner nodes; ` +
      `the brief's estimate changes×(height − ⌊log2 changes⌋ + 1) would give ${median(estimates).toFixed(0)}` +
      (counted ? "" : " (the counter saw no calls, so the ESTIMATE was used)"),
  });

  // --- get latency ----------------------------------------------------------------------------------------------------
  report.log(`[core] get latency: ${getSamples} samples × 1,000 gets, tree vs Map`);
  maybeGc();
  const map = new Map<string, Uint8Array>();
  for (const k of live) {
    const value = tree.get(k);
    if (value === undefined) throw new Error("bench: live key missing from the tree");
    map.set(hex(k), value);
  }
  const BATCH = 1_000;
  const sampleKeys: Uint8Array[][] = [];
  const sampleHex: string[][] = [];
  for (let s = 0; s < getSamples; s++) {
    const ks: Uint8Array[] = [];
    const hs: string[] = [];
    for (let i = 0; i < BATCH; i++) {
      const k = live[rng.int(live.length)]!;
      ks.push(k);
      hs.push(hex(k)); // a string equal to, but not the same object as, the Map's key
    }
    sampleKeys.push(ks);
    sampleHex.push(hs);
  }
  const treeBatch = (ks: Uint8Array[]): number => {
    let found = 0;
    const ns = timeNs(() => {
      for (let i = 0; i < ks.length; i++) if (tree.get(ks[i]!) !== undefined) found++;
    });
    if (found !== ks.length) throw new Error("bench: tree.get missed a live key");
    return ns / ks.length;
  };
  const mapBatch = (hs: string[]): number => {
    let found = 0;
    const ns = timeNs(() => {
      for (let i = 0; i < hs.length; i++) if (map.get(hs[i]!) !== undefined) found++;
    });
    if (found !== hs.length) throw new Error("bench: Map.get missed a live key");
    return ns / hs.length;
  };
  const hexMapBatch = (ks: Uint8Array[]): number => {
    let found = 0;
    const ns = timeNs(() => {
      for (let i = 0; i < ks.length; i++) if (map.get(hex(ks[i]!)) !== undefined) found++;
    });
    if (found !== ks.length) throw new Error("bench: Map.get missed a live key");
    return ns / ks.length;
  };
  // Warm-up (JIT), then interleave so that machine noise hits both sides alike.
  for (let s = 0; s < Math.min(20, getSamples); s++) {
    treeBatch(sampleKeys[s]!);
    mapBatch(sampleHex[s]!);
    hexMapBatch(sampleKeys[s]!);
  }
  const treeGet: number[] = [];
  const mapGet: number[] = [];
  const hexMapGet: number[] = [];
  for (let s = 0; s < getSamples; s++) {
    treeGet.push(treeBatch(sampleKeys[s]!));
    mapGet.push(mapBatch(sampleHex[s]!));
    hexMapGet.push(hexMapBatch(sampleKeys[s]!));
  }
  const mapFloorName = `Map<string,Uint8Array>.get, ${live.length.toLocaleString("en-US")} hex keys precomputed (no hex conversion)`;
  report.add({
    section: SECTION,
    name: `get, random existing key, working tree (median of ${getSamples} × ${BATCH})`,
    value: median(treeGet),
    unit: "ns",
    floorName: mapFloorName,
    floorValue: median(mapGet),
    target: 5,
  });
  report.add({
    section: SECTION,
    name: "  context: Map.get including the key's hex conversion",
    value: median(hexMapGet),
    unit: "ns",
    floorName: mapFloorName,
    floorValue: median(mapGet),
  });
  tree.close();
}
