/**
 * Persistent stores, `Tree.open` with default options, against plain SQLite tables in both layouts:
 *
 * 1. Grow one store with the BANK profile to 1M keys (quick: 100k), ~2,000 changes a version, in a child process so
 *    that its peak RSS is the store's alone; the plain tables apply each version in this process while the child
 *    waits. Then once more with durability "async", for its RSS.
 * 2. Get at the latest version and at latest − 300, against the same lookups on the plain tables (same keys and
 *    values), in interleaved batches of 1,000.
 * 3. Export of the grown tree against a fixed 200,000 nodes/s, and against iterating as many plain rows.
 * 4. Reopen after 1,000 versions (quick: 200) committed since the last scheduled checkpoint.
 * @module
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { Tree } from "../src/index.js";
import type { GrowResult } from "./child.js";
import { applyToTree, bytesOf, Child, consume, fasterPlain, gc, LAYOUTS, median, mib, perLayout, PlainKv, plainDb, layoutSql, timeNs, type Bench, type Layout } from "./harness.js";
import { BANK, growTo, Rng, Workload, type Change, type StoreProfile } from "./workload.js";

/** The historic get reads this many versions back. */
const DEPTH = 300;
const plainFile = (dir: string, l: Layout): string => join(dir, `plain-${l.replace(" ", "-")}.sqlite`);

/** A store grown by {@link grow}: `dir/store`, and with plains, the plain tables `plainFile(dir, layout)`. */
export interface Grown {
  dir: string;
  child: GrowResult;
  /** Set/remove + commit time (in the child) of the versions after the initial load, their changes and count. */
  treeNs: number;
  ops: number;
  versions: number;
  plainNs: Record<Layout, number>;
}

async function grow(b: Bench, durability: "normal" | "async", withPlains: boolean): Promise<Grown> {
  const target = b.q(100_000, 1_000_000);
  // 150 updates + 50 deletes + 50 re-creates + growth a version (quick: 30 + 10 + 10 + ...): more than DEPTH versions.
  const growth = Math.min(1_750, Math.floor((target - BANK.initialSize) / (DEPTH + 100)));
  const dir = b.dir(`grow-${durability}`, true);
  b.log(`grow BANK to ${target.toLocaleString("en-US")} keys (+${growth} a version), durability ${durability}, store in a child process`);
  const child = new Child("grow", [join(dir, "store"), durability]);
  const plains = withPlains ? LAYOUTS.map((l) => new PlainKv(plainFile(dir, l), l)) : [];
  const g = { dir, treeNs: 0, ops: 0, versions: -1, plainNs: perLayout(() => 0) };
  let result: GrowResult;
  try {
    for (const batch of growTo(BANK, target, 11, { changesPerVersion: b.q(40, 200), growthPerVersion: growth })) {
      const ns = await child.ask<number>(batch);
      const plainNs = plains.map((p) => timeNs(() => p.apply(batch)));
      // The initial load (version 1) is not part of the throughput.
      if (++g.versions === 0) continue;
      g.treeNs += ns;
      g.ops += batch.length;
      plains.forEach((p, i) => (g.plainNs[p.layout] += plainNs[i]!));
      if (g.versions % 100 === 0) b.log(`  ${g.versions} versions, tree ${(g.treeNs / 1e9).toFixed(0)} s`);
    }
    result = await child.ask<GrowResult>(null);
  } finally {
    child.kill();
    for (const p of plains) p.db.close();
  }
  if (result.size !== target) throw new Error(`bench: grew to ${result.size} keys, expected ${target}`);
  return { ...g, child: result };
}

let grown: Promise<Grown> | undefined;
/** The BANK store grown with default options and its plain tables, built once per run (state-sync exports it too). */
export const grownBank = (b: Bench): Promise<Grown> => (grown ??= grow(b, "normal", true));

export async function persistent(b: Bench): Promise<void> {
  const g = await grownBank(b);
  const target = g.child.size;
  const keys = target.toLocaleString("en-US");
  b.row({ name: `grow BANK to ${keys} keys, ${g.versions} versions × ~${Math.round(g.ops / g.versions)} changes`, value: g.ops / (g.treeNs / 1e9), unit: "ops/s", ...fasterPlain(perLayout((l) => g.ops / (g.plainNs[l] / 1e9)), "ops/s", "same changes, 1 tx/version"), note: "set/remove + commit timed in the store's process; the initial load excluded" });
  const rssRow = (r: GrowResult, durability: string): void => {
    b.row({ name: `peak RSS growing to ${keys} keys, durability ${durability}`, value: r.peak.rss, unit: "MiB", floor: "1 GiB", floorValue: 1024, target: 1, note: `at v${r.peakVersion}: anonymous ${r.peak.anon.toFixed(0)} MiB (V8 heap used ${r.peakHeap.toFixed(0)}) + mapped files ${r.peak.file.toFixed(0)} MiB; the child (node + tsx + the store) started at ${r.base.rss.toFixed(0)} MiB` });
  };
  rssRow(g.child, "normal (default)");
  rssRow((await grow(b, "async", false)).child, "async");
  const store = join(g.dir, "store");
  b.row({ name: `store size after growing to ${keys} keys (all ${g.child.latest} versions kept)`, value: mib(bytesOf(store)), unit: "MiB", ...fasterPlain(perLayout((l) => mib(bytesOf(plainFile(g.dir, l)))), "MiB", "latest state only"), note: "context" });

  // --- gets ------------------------------------------------------------------------------------------------------------
  gc();
  const tree = Tree.open(store);
  const plains = LAYOUTS.map((l) => new PlainKv(plainFile(g.dir, l), l));
  try {
    const old = tree.version - DEPTH;
    // ~60,000 live keys: keys are PRNG bytes, so their first two bytes are uniform.
    const threshold = Math.ceil((60_000 / target) * 65_536);
    const latestKeys = (plains[0]!.db.prepare("SELECT key FROM kv").pluck().all() as Uint8Array[]).filter((k) => (k[0]! << 8) + k[1]! < threshold);
    const oldView = tree.at(old);
    const oldKeys = latestKeys.filter((k) => oldView.get(k) !== undefined);
    for (const k of latestKeys.slice(0, 2_000)) {
      if (!plains.every((p) => Buffer.compare(p.get(k)!, tree.get(k)!) === 0)) throw new Error("bench: the tree and a plain table disagree");
    }
    const samples = b.q(60, 200);
    b.log(`get: ${samples} × 1,000 lookups each at v${tree.version}, at v${old}, and on both plain tables`);
    const rng = new Rng(14);
    const pick = (pool: Uint8Array[]): Uint8Array[] => Array.from({ length: 1_000 }, () => pool[rng.int(pool.length)]!);
    const run = (keys: Uint8Array[], get: (k: Uint8Array) => Uint8Array | undefined): number => {
      let found = 0;
      const ns = timeNs(() => keys.forEach((k) => (found += get(k) === undefined ? 0 : 1)));
      if (found !== keys.length) throw new Error("bench: a get of a live key found nothing");
      return ns / keys.length;
    };
    const r: number[][] = [[], [], [], []];
    for (let s = 0; s < samples + 10; s++) {
      const [a, c] = [pick(latestKeys), pick(oldKeys)];
      const view = tree.at(old); // one view per batch: at(v) checks the version once
      const gets = [(): number => run(a, (k) => tree.get(k)), (): number => run(a, (k) => plains[0]!.get(k)), (): number => run(a, (k) => plains[1]!.get(k)), (): number => run(c, (k) => view.get(k))];
      // Rotated, so that no side always runs right after another's cache misses; the first 10 warm up.
      for (let j = 0; j < 4; j++) {
        const i = (s + j) % 4;
        const ns = gets[i]!();
        if (s >= 10) r[i]!.push(ns);
      }
    }
    const floor = fasterPlain(perLayout((l) => median(r[LAYOUTS.indexOf(l) + 1]!)), "ns", `SELECT value WHERE key = ?, ${keys} keys`);
    b.row({ name: `get, latest version (v${tree.version}), median of ${samples} × 1,000`, value: median(r[0]!), unit: "ns", ...floor, target: 1.2, note: `${latestKeys.length.toLocaleString("en-US")} sampled keys` });
    b.row({ name: `get at latest − ${DEPTH} (at(v${old}).get)`, value: median(r[3]!), unit: "ns", ...floor, target: 1.5, note: `${oldKeys.length.toLocaleString("en-US")} sampled keys live at v${old}` });

    // --- export ----------------------------------------------------------------------------------------------------------
    gc();
    let nodes = 0;
    const exportNs = timeNs(() => {
      for (const n of tree.at(tree.version).export()) {
        consume(n);
        nodes++;
      }
    });
    if (nodes !== 2 * target - 1) throw new Error(`bench: the export gave ${nodes} nodes`);
    const exportRate = nodes / (exportNs / 1e9);
    b.row({ name: `export of the ${keys}-key tree (${nodes.toLocaleString("en-US")} nodes)`, value: exportRate, unit: "nodes/s", floor: "200,000 nodes/s (target)", floorValue: 200_000, target: 1 });
    const iterate = perLayout((l) => {
      const p = plains[LAYOUTS.indexOf(l)]!;
      let n = 0;
      const ns = timeNs(() => {
        while (n < nodes) for (const row of p.db.prepare("SELECT key, value FROM kv").raw().iterate() as IterableIterator<unknown[]>) if ((consume(row), ++n >= nodes)) break;
      });
      return nodes / (ns / 1e9);
    });
    b.row({ name: "  export, against iterating as many rows", value: exportRate, unit: "nodes/s", ...fasterPlain(iterate, "nodes/s", `SELECT key, value iterating ${nodes.toLocaleString("en-US")} rows`), note: "context" });
  } finally {
    tree.close();
    for (const p of plains) p.db.close();
  }
  reopen(b);
}

/**
 * Reopen: the initial BANK load committed as a checkpoint (checkpointInterval 1), then versions of ~200 changes with
 * checkpointInterval 100,000, so that reopening replays all of them (unless the store checkpointed early because its
 * dirty nodes outgrew the memory budget). Floors: reading as many op rows (version, seq, key, value hash) from plain
 * tables of the same ops on a fresh connection, and the same set/remove on `Tree.memory()` with one commit.
 */
function reopen(b: Bench): void {
  const versions = b.q(200, 1_000);
  const profile: StoreProfile = { ...BANK, changesPerVersion: 130, growthPerVersion: 40 };
  const dir = b.dir("reopen");
  const store = join(dir, "store");
  b.log(`reopen: ${versions} versions of ~200 changes after a checkpoint`);
  const w = new Workload([profile], 13);
  let t = Tree.open(store, { checkpointInterval: 1 });
  applyToTree(t, [...w.initial()]);
  t.commit();
  t.close();
  t = Tree.open(store, { checkpointInterval: 100_000 });
  const logs = LAYOUTS.map((l) => {
    const db = plainDb(join(dir, `log-${l.replace(" ", "-")}.sqlite`));
    db.exec(`CREATE TABLE log (version INTEGER, seq INTEGER, key BLOB, hash BLOB, PRIMARY KEY (version, seq))${layoutSql(l)}`);
    return db;
  });
  const inserts = logs.map((db) => db.prepare("INSERT INTO log VALUES (?, ?, ?, ?)"));
  const history: Change[][] = [];
  let ops = 0;
  for (let v = 0; v < versions; v++) {
    const changes = w.nextVersion();
    history.push(changes);
    applyToTree(t, changes);
    t.commit();
    logs.forEach((db, i) => db.transaction(() => changes.forEach((c, seq) => inserts[i]!.run(t.version, seq, c.key, c.delete ? null : createHash("sha256").update(c.value!).digest())))());
    ops += changes.length;
  }
  const [latest, hash] = [t.version, t.hash];
  t.close();
  logs.forEach((db) => db.close());

  const opens: number[] = [];
  const reads = LAYOUTS.map((): number[] => []);
  for (let r = 0; r < 3; r++) {
    gc();
    opens.push(timeNs(() => (t = Tree.open(store, { checkpointInterval: 100_000 }))));
    if (t.version !== latest || Buffer.compare(t.hash, hash) !== 0) throw new Error("bench: the reopened store is not at the committed version");
    t.close();
    LAYOUTS.forEach((l, i) => reads[i]!.push(timeNs(() => {
      const db = plainDb(join(dir, `log-${l.replace(" ", "-")}.sqlite`), true);
      for (const row of db.prepare("SELECT * FROM log ORDER BY version, seq").raw().iterate()) consume(row);
      db.close();
    })));
  }
  gc();
  const mem = Tree.memory();
  applyToTree(mem, [...new Workload([profile], 13).initial()]);
  mem.commit();
  const memNs = timeNs(() => (history.forEach((c) => applyToTree(mem, c)), mem.commit()));
  mem.close();
  const name = `reopen after ${versions.toLocaleString("en-US")} versions since the last scheduled checkpoint (${ops.toLocaleString("en-US")} ops, median of 3)`;
  const ms = median(opens) / 1e6;
  b.row({ name, value: ms, unit: "ms", ...fasterPlain(perLayout((l) => median(reads[LAYOUTS.indexOf(l)]!) / 1e6), "ms", `SELECT of the same ${ops.toLocaleString("en-US")} op rows, fresh connection`) });
  b.row({ name, value: ms, unit: "ms", floor: `Tree.memory(): the same set/remove from the same v1 state, one commit`, floorValue: memNs / 1e6, note: "the in-memory floor hashes every new value, which a replay does not" });
}
