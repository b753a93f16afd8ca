/**
 * Persistent stores, `Tree.open` with default options, against plain SQLite tables in both layouts:
 *
 * 1. Grow one store with the BANK profile to 1M keys (quick: 100k), ~2,000 changes a version, in a child process so
 *    that its peak RSS is the store's alone; the plain tables apply each version here while the child waits. Then
 *    once more with durability "async", for its RSS.
 * 2. Get at the latest version and at latest − 300 against the same lookup on the plain tables (same keys and
 *    values), in interleaved batches of 1,000.
 * 3. Export of the grown tree against a fixed 200,000 nodes/s, and against iterating as many plain rows.
 * 4. Reopen after 1,000 versions (quick: 200) committed since the last scheduled checkpoint.
 * @module
 */
import { hash } from "node:crypto";
import { join } from "node:path";
import { Tree } from "../src/index.js";
import type { GrowResult } from "./child.js";
import { Child } from "./child-process.js";
import { fasterPlain, layoutFile, LAYOUTS, layoutSql, perLayout, Plain, plainDb, type Layout } from "./floors.js";
import { floorOf, type Bench } from "./report.js";
import { applyToTree } from "./subjects.js";
import { bytesOf, consume, gc, int, median, mib, nsPerGet, rotated, sum, timeNs } from "./timing.js";
import { BANK, growTo, Rng, Workload, type Change } from "./workload.js";

const DEPTH = 300; // the historic get reads this many versions back

/** A store grown by {@link grow} in `dir/store`, and its plain tables `layoutFile(dir, "plain", layout)`. */
export interface Grown {
  dir: string;
  child: GrowResult;
  /** Set/remove + commit time in the child of the versions after the initial load, their changes and count. */
  treeNs: number;
  ops: number;
  versions: number;
  plainNs: Record<Layout, number>;
}

async function grow(b: Bench, durability: "normal" | "async", withPlains: boolean): Promise<Grown> {
  const target = b.q(100_000, 1_000_000);
  // 150 updates + 50 deletes + 50 re-creates + growth a version (quick: 30 + 10 + 10 + …), over DEPTH + 100 versions.
  const growth = Math.min(1_750, Math.floor((target - BANK.initialSize) / (DEPTH + 100)));
  const dir = b.dir(`grow-${durability}`, true);
  b.log(`grow BANK to ${int(target)} keys (+${growth} a version), durability ${durability}, in a child process`);
  const child = new Child("grow", [join(dir, "store"), durability]);
  const plains = withPlains ? LAYOUTS.map((l) => new Plain(layoutFile(dir, "plain", l), l)) : [];
  const g = { dir, treeNs: 0, ops: 0, versions: -1, plainNs: perLayout(() => 0) };
  try {
    for (const batch of growTo(BANK, target, 11, { changesPerVersion: b.q(40, 200), growthPerVersion: growth })) {
      const ns = await child.ask<number>(batch);
      const plainNs = plains.map((p) => timeNs(() => p.put(batch)));
      if (++g.versions === 0) continue; // the initial load is not part of the throughput
      [g.treeNs, g.ops] = [g.treeNs + ns, g.ops + batch.length];
      plains.forEach((p, i) => (g.plainNs[p.layout] += plainNs[i]!));
      if (g.versions % 100 === 0) b.log(`  ${g.versions} versions, tree ${(g.treeNs / 1e9).toFixed(0)} s`);
    }
    const result = await child.ask<GrowResult>(null);
    if (result.size !== target) throw new Error(`bench: grew to ${result.size} keys, expected ${target}`);
    return { ...g, child: result };
  } finally {
    child.kill();
    plains.forEach((p) => p.db.close());
  }
}

let grown: Promise<Grown> | undefined;
/** The BANK store grown with default options, and its plain tables: built once a run (state-sync imports it too). */
export const grownBank = (b: Bench): Promise<Grown> => (grown ??= grow(b, "normal", true));

export async function persistent(b: Bench): Promise<void> {
  const g = await grownBank(b);
  const keys = int(g.child.size);
  const plainRates = fasterPlain(perLayout((l) => g.ops / (g.plainNs[l] / 1e9)), "ops/s", "same changes, 1 tx/version");
  b.row(`grow BANK to ${keys} keys, ${g.versions} versions × ~${int(g.ops / g.versions)} changes`,
    g.ops / (g.treeNs / 1e9), "ops/s", plainRates, { note: "timed in the store's process; the initial load excluded" });
  const asyncGrow = (await grow(b, "async", false)).child;
  for (const [r, durability] of [[g.child, "normal (default)"], [asyncGrow, "async"]] as const) {
    const note = `at v${r.peakVersion}: anonymous ${int(r.peak.anon)} MiB (V8 heap used ${int(r.peakHeap)}) + ` +
      `mapped files ${int(r.peak.file)} MiB; the child (node, the store) started at ${int(r.base.rss)} MiB`;
    b.row(`peak RSS growing to ${keys} keys, durability ${durability}`, r.peak.rss, "MiB", floorOf("1 GiB", 1024),
      { target: 1, note });
  }
  const store = join(g.dir, "store");
  const sizes = perLayout((l) => mib(bytesOf(layoutFile(g.dir, "plain", l))));
  b.row(`store size after growing to ${keys} keys (all ${g.child.latest} versions kept)`, mib(bytesOf(store)), "MiB",
    fasterPlain(sizes, "MiB", "latest state only"), { note: "context" });

  gc();
  const tree = Tree.open(store);
  const plains = LAYOUTS.map((l) => new Plain(layoutFile(g.dir, "plain", l), l));
  try {
    const old = tree.version - DEPTH;
    // ~60,000 live keys: keys are PRNG bytes, so their first two bytes are uniform.
    const cut = Math.ceil((60_000 / g.child.size) * 65_536);
    const all = plains[0]!.db.prepare("SELECT key FROM kv").pluck().all() as Uint8Array[];
    const latestKeys = all.filter((k) => (k[0]! << 8) + k[1]! < cut);
    const oldView = tree.at(old);
    const oldKeys = latestKeys.filter((k) => oldView.get(k) !== undefined);
    for (const k of latestKeys.slice(0, 2_000)) {
      if (plains.some((p) => Buffer.compare(p.get(k)!, tree.get(k)!) !== 0)) throw new Error("bench: plain ≠ tree");
    }
    const samples = b.q(60, 200);
    b.log(`get: ${samples} × 1,000 lookups each at v${tree.version}, at v${old} and on both plain tables`);
    const rng = new Rng(14);
    const pick = (pool: Uint8Array[]): Uint8Array[] => Array.from({ length: 1_000 }, () => pool[rng.int(pool.length)]!);
    // The first 10 rounds warm up.
    const r = await rotated(samples, 10, () => {
      const [a, c, view] = [pick(latestKeys), pick(oldKeys), tree.at(old)]; // a view per batch: at(v) checks v once
      return [
        (): number => nsPerGet(a, (k) => tree.get(k)),
        (): number => nsPerGet(a, (k) => plains[0]!.get(k)),
        (): number => nsPerGet(a, (k) => plains[1]!.get(k)),
        (): number => nsPerGet(c, (k) => view.get(k)),
      ];
    });
    const floor = fasterPlain(perLayout((_, i) => median(r[i + 1]!)), "ns", `SELECT value WHERE key = ?, ${keys} keys`);
    const live = (n: number, v: number): { note: string } => ({ note: `${int(n)} sampled keys live at v${v}` });
    b.row(`get, latest version, median of ${samples} × 1,000`, median(r[0]!), "ns", floor,
      { target: 1.2, ...live(latestKeys.length, tree.version) });
    b.row(`get at latest − ${DEPTH}`, median(r[3]!), "ns", floor, { target: 1.5, ...live(oldKeys.length, old) });

    gc();
    let nodes = 0;
    const exportNs = timeNs(() => {
      for (const n of tree.at(tree.version).export()) consume(n), nodes++;
    });
    if (nodes !== 2 * g.child.size - 1) throw new Error(`bench: the export gave ${nodes} nodes`);
    const name = `export of the ${keys}-key tree (${int(nodes)} nodes)`;
    b.row(name, nodes / (exportNs / 1e9), "nodes/s", floorOf("200,000 nodes/s (target)", 200_000), { target: 1 });
    const scans = fasterPlain(perLayout((_, i) => plains[i]!.scan(nodes)), "nodes/s", "SELECT key, value of as many rows");
    b.row("  export, context", nodes / (exportNs / 1e9), "nodes/s", scans);
  } finally {
    tree.close();
    plains.forEach((p) => p.db.close());
  }
  reopen(b);
}

/**
 * Reopen: the initial BANK load committed as a checkpoint (checkpointInterval 1), then versions of ~200 changes with
 * checkpointInterval 100,000, so that reopening replays every one (unless the store checkpointed early because its
 * dirty nodes outgrew the memory budget). Floors: reading as many op rows (version, seq, key, value hash) from plain
 * tables on a fresh connection, and the same set/remove on `Tree.memory()` with one commit.
 */
function reopen(b: Bench): void {
  const versions = b.q(200, 1_000);
  const profile = { ...BANK, changesPerVersion: 130, growthPerVersion: 40 };
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
    const db = plainDb(layoutFile(dir, "log", l));
    db.exec(`CREATE TABLE log (version, seq, key BLOB, hash BLOB, PRIMARY KEY (version, seq))${layoutSql(l)}`);
    const ins = db.prepare("INSERT INTO log VALUES (?, ?, ?, ?)");
    const put = db.transaction((cs: Change[], v: number) =>
      cs.forEach((c, seq) => ins.run(v, seq, c.key, c.delete ? null : hash("sha256", c.value!, "buffer"))));
    return { db, put };
  });
  const history: Change[][] = [];
  for (let v = 0; v < versions; v++) {
    history.push(w.nextVersion());
    applyToTree(t, history[v]!);
    t.commit();
    logs.forEach((log) => log.put(history[v]!, t.version));
  }
  const [latest, root] = [t.version, t.hash];
  t.close();
  logs.forEach((log) => log.db.close());

  const opens: number[] = [];
  const reads = LAYOUTS.map((): number[] => []);
  for (let r = 0; r < 3; r++) {
    gc();
    opens.push(timeNs(() => (t = Tree.open(store, { checkpointInterval: 100_000 }))));
    if (t.version !== latest || Buffer.compare(t.hash, root) !== 0) throw new Error("bench: reopened elsewhere");
    t.close();
    LAYOUTS.forEach((l, i) => reads[i]!.push(timeNs(() => {
      const db = plainDb(layoutFile(dir, "log", l), true);
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
  const ops = int(sum(history.map((c) => c.length)));
  const name = `reopen after ${versions} versions since the last scheduled checkpoint (${ops} ops)`;
  const scan = fasterPlain(perLayout((_, i) => median(reads[i]!) / 1e6), "ms", "SELECT of as many op rows, new connection");
  b.row(name, median(opens) / 1e6, "ms", scan, { note: "median of 3" });
  const memFloor = floorOf("Tree.memory(): the same set/remove from the same v1 state, one commit", memNs / 1e6);
  b.row(name, median(opens) / 1e6, "ms", memFloor, { note: "it hashes every value, which a replay does not" });
}
