/**
 * The iavl-bench mixed profile (SPEC §8): bank, lockup and staking as three `Tree.open` stores at 0.3 of the
 * profile's initial size, one transaction per store and version, against three plain kv tables in each layout fed
 * the same stream.
 *
 * - Durability "normal" with keepRecent 100 (quick: 30) for 1,000 versions (quick: 150), interleaved version by
 *   version with both floors. The first 100 versions (quick: 20; nothing is pruned yet) give the short figure, the
 *   last 500 (quick: 75) the steady state.
 * - The store's size at the end (store folders with their WAL, open, after a prune to exactly keepRecent versions)
 *   against plain rowid tables of the kept (key, version, value) rows, vacuumed: every key's value as of the kept
 *   window's first version (copied from the rowid floor, which holds that state then, with each key's version
 *   tracked from the stream) and every change after it (a delete as NULL).
 * - Durability "async" over the same versions alone (its writer thread would overlap the floors' timing), with a
 *   `flush()` after each window's last version inside the time, against the floors of the same versions.
 * @module
 */
import { cpSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { OpenOptions } from "../src/index.js";
import { fasterPlain, layoutFile, LAYOUTS, perLayout, Plain } from "./floors.js";
import { floorOf, type Bench } from "./report.js";
import { flushingAt, load, plainSubject, rate, replay, scaled, skip, treeSubject, type Subject } from "./subjects.js";
import { bytesOf, gc, int, mib, sum } from "./timing.js";
import { MIXED, Workload, type Change } from "./workload.js";

const SEED = 12;

export async function mixed(b: Bench): Promise<void> {
  const profiles = scaled(MIXED, { initialSize: 0.3 * 35_000 });
  const [versions, keep, short, steady] = [b.q(150, 1_000), b.q(30, 100), b.q(20, 100), b.q(75, 500)];
  const names = new Workload(profiles, SEED).storeNames;
  const dir = b.dir("mixed");
  const first = 2 + versions - keep; // version 1 is the initial load, so the last is 1 + versions

  // The kept rows: until `first`, only each key's last version, in memory; at `first`, the rowid floor's rows with
  // those versions; after it, every change.
  const kept = names.map((s) => new Plain(layoutFile(dir, `kept-${s}`, "rowid"), "rowid", true));
  const lastChange = names.map(() => new Map<string, number>());
  const track = (i: number, changes: readonly Change[], version: number): void => {
    for (const c of changes) {
      const k = Buffer.from(c.key.buffer, c.key.byteOffset, c.key.byteLength).toString("latin1");
      if (c.delete) lastChange[i]!.delete(k);
      else lastChange[i]!.set(k, version);
    }
  };
  const keepRows = (groups: Change[][], version: number): void => groups.forEach((g, i) => {
    if (version > first) return kept[i]!.put(g, version);
    track(i, g, version);
    if (version < first) return;
    const db = kept[i]!.db;
    db.exec(`ATTACH '${floors[0]!.plains[i]!.db.name}' AS p; CREATE TEMP TABLE last (key BLOB PRIMARY KEY, version)`);
    const ins = db.prepare("INSERT INTO temp.last VALUES (?, ?)");
    db.transaction(() => lastChange[i]!.forEach((v, k) => ins.run(Buffer.from(k, "latin1"), v)))();
    const copied = db.prepare("INSERT INTO main.kv SELECT key, last.version, value FROM p.kv JOIN temp.last USING (key)").run();
    if (copied.changes !== lastChange[i]!.size) throw new Error("bench: the rowid floor and the stream disagree");
    db.exec("DETACH p");
  });

  b.log(`initial load, ${int(profiles[0]!.initialSize)} keys × ${names.length} stores`);
  const floors = LAYOUTS.map((l) => plainSubject(dir, names, l));
  const trees = (o: OpenOptions): ReturnType<typeof treeSubject> => treeSubject(join(dir, "normal"), names, o);
  let normal = trees({});
  const tracker: Subject = { put: (i, c) => track(i, c, 1), commit: () => undefined, close: () => undefined };
  await load(new Workload(profiles, SEED), [normal, ...floors, tracker]);
  normal.close();
  cpSync(join(dir, "normal"), join(dir, "async"), { recursive: true });
  normal = trees({ keepRecent: keep });

  b.log(`${versions} versions: plain rowid and plain without rowid, interleaved`);
  const stream = (): Workload => skip(new Workload(profiles, SEED), 0);
  const t = await replay(b, stream(), versions, floors, (g, v) => keepRows(g, v + 2));
  // The store alone: its writer threads land a version while the next is built, never in time a floor is timed.
  b.log(`${versions} versions, durability normal`);
  const tn = await replay(b, stream(), versions, [flushingAt(normal, [short, versions])]);
  const floorsOver = (from: number, to: number): ReturnType<typeof fasterPlain> =>
    fasterPlain(perLayout((_, i) => rate(t, i, from, to)), "ops/s", "same changes, 1 tx/store/version");
  const [shortFloor, steadyFloor] = [floorsOver(0, short), floorsOver(versions - steady, versions)];
  const label = (what: string, n: number): string => `mixed ×0.3, ${what} ${n} versions × ~${int(t.ops[0]!)} changes`;
  const flushNote = "the flush() after the window's last version inside the time";
  b.row(label("durability normal, first", short), rate(tn, 0, 0, short), "ops/s", shortFloor, { target: 1 / 0.6, note: flushNote });
  const steadyName = (durability: string): string => label(`durability ${durability}, keepRecent ${keep}, last`, steady);
  b.row(steadyName("normal"), rate(tn, 0, versions - steady), "ops/s", steadyFloor, {
    target: 1 / 1.5,
    note: `the steady state a chain lives in: ≥ 1.5× the plain tables' rate (issue 24); ${flushNote}`,
  });

  for (const tree of normal.trees) await tree.prune(tree.version - keep);
  const storeBytes = bytesOf(join(dir, "normal"));
  const keptVersions = normal.trees[0]!.versions().length;
  normal.close();
  floors.forEach((f) => f.close());
  kept.forEach((k) => (k.db.exec("VACUUM"), k.db.close()));
  const keptBytes = sum(names.map((s) => bytesOf(layoutFile(dir, `kept-${s}`, "rowid"))));
  b.row(`store size after ${versions} versions, keepRecent ${keep} (3 stores)`, mib(storeBytes), "MiB",
    floorOf("plain rowid (key, version, value) tables of the kept rows, vacuumed", mib(keptBytes)),
    { target: 1.2, note: `${keptVersions} versions kept; the store folders with their WAL, open, after a prune` });

  // Only the async copy is needed from here on; the rest would take as much disk again as it grows.
  for (const f of readdirSync(dir)) if (f !== "async") rmSync(join(dir, f), { recursive: true, force: true });
  gc();
  b.log(`${versions} versions, durability async`);
  const a = treeSubject(join(dir, "async"), names, { durability: "async", keepRecent: keep });
  const at = await replay(b, stream(), versions, [flushingAt(a, [short, versions])]);
  a.close();
  b.row(label("durability async, first", short), rate(at, 0, 0, short), "ops/s", shortFloor, { target: 1, note: flushNote });
  b.row(steadyName("async"), rate(at, 0, versions - steady), "ops/s", steadyFloor, { target: 1 / 0.8, note: flushNote });
}
