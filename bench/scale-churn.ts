/**
 * Churn on the scale section's grown store (bench/scale.ts): versions of 2,000 changes of which 25 % removes, as
 * iavl-bench counts them (1,500 updates and 500 removes of live keys, and 500 creates on top that keep the key count;
 * bench/scale-data.ts), 1,000 versions (quick: 60), the store reopened with keepRecent 100 (quick: 20), against the
 * plain tables (both layouts, upsert/delete) taking the same versions here:
 *
 * - the store's rate over the last half of the versions against the plain tables' over the same versions, a version's
 *   commit time at p99 against p50 there, and the most versions kept at once (counted every 10 versions);
 * - its disk at the end (the store folder after its automatic prunes and a flush, open, with its WAL) against a
 *   plain rowid table of the kept (key, version, value) rows, as bench/mixed.ts builds it: at the first kept version
 *   the plain table's state is copied in SQL (ATTACH, from the without-rowid table, so in key order), then every
 *   change after it is added, a remove as NULL.
 * @module
 */
import { fasterPlain, layoutFile, perLayout, Plain } from "./floors.js";
import { floorOf } from "./report.js";
import type { ScaleStats } from "./scale-child.js";
import { Churn } from "./scale-data.js";
import type { Scale } from "./scale.js";
import { bytesOf, checkFree, int, mib, percentile, sum, timeNs } from "./timing.js";
import type { Change } from "./workload.js";

/** One churn version in the store (timed in its process) and in the plain tables (timed here). */
export async function churnVersion(s: Scale): Promise<{ store: number; plain: number[]; changes: Change[] }> {
  const v = ++s.version;
  const store = await s.ask<number>({ churn: v });
  const changes = (s.churn ??= new Churn(s.size)).version(v);
  return { store, plain: s.plains.map((p) => timeNs(() => p.put(changes))), changes };
}

export async function churn(s: Scale): Promise<void> {
  const { b } = s;
  const [versions, keep] = [b.q(60, 1_000), b.q(20, 100)];
  b.log(`churn at ${int(s.size)} keys: ${versions} versions with keepRecent ${keep}`);
  await s.ask({ reopen: { keepRecent: keep } });
  const first = s.version + versions - keep + 1;
  const keptFile = layoutFile(s.dir, "kept", "rowid");
  let kept: Plain | undefined;
  const [ops, storeNs, plainNs]: [number[], number[], number[][]] = [[], [], s.plains.map(() => [])];
  // The most versions kept at once, counted every 10 versions (the automatic prunes run beside the commits).
  let mostKept = 0;
  // The store's versions back to back, then the floors' on the same versions: its writer thread lands a version
  // while the next is built, never in time a floor is timed. The flush that lands the last ones counts as the last
  // version's.
  const from = s.version;
  for (let j = 0; j < versions; j++) {
    storeNs.push(await s.ask<number>({ churn: from + j + 1 }));
    if ((j + 1) % 10 === 0) mostKept = Math.max(mostKept, await s.ask<number>("kept"));
    if ((j + 1) % Math.ceil(versions / 10) === 0) b.log(`  ${j + 1} of ${versions} versions (the store)`);
  }
  storeNs[versions - 1]! += await s.ask<number>("flush");
  for (let j = 0; j < versions; j++) {
    const changes = (s.churn ??= new Churn(s.size)).version(++s.version);
    ops.push(changes.length);
    s.plains.forEach((p, i) => plainNs[i]!.push(timeNs(() => p.put(changes))));
    if (s.version > first) kept!.put(changes, s.version);
    else if (s.version === first) kept = keptState(s, keptFile, first);
  }
  const half = Math.floor(versions / 2);
  const rate = (ns: number[]): number => sum(ops.slice(half)) / (sum(ns.slice(half)) / 1e9);
  const floor = fasterPlain(perLayout((_, i) => rate(plainNs[i]!)), "ops/s", "same changes, 1 tx/version");
  const name = `churn at ${int(s.size)} keys, keepRecent ${keep}: last ${versions - half} of ${versions} versions × ${int(ops[0]!)} changes`;
  b.row(name, rate(storeNs), "ops/s", floor, { target: 1, note: "timed in the store's process, its versions back to back (the last with the flush that lands them), then the floors'" });
  // A chain with one-second blocks cannot absorb a checkpoint's stall.
  const ms = storeNs.slice(half).map((ns) => ns / 1e6);
  b.row(`  a version's commit there, p99`, percentile(ms, 0.99), "ms", floorOf("the same versions' p50", percentile(ms, 0.5)), {
    target: 3,
    note: `the plain tables' p50 / p99: ${plainNs.map((ns) => ns.slice(half).map((x) => x / 1e6)).map((x) => `${percentile(x, 0.5).toFixed(0)} / ${percentile(x, 0.99).toFixed(0)} ms`).join(", ")}`,
  });
  b.row(`  versions kept at most, keepRecent ${keep} (counted every 10 versions)`, mostKept, "versions", floorOf("keepRecent", keep), { target: 1.2 });

  const st = await s.ask<ScaleStats>("stats");
  const storeBytes = bytesOf(s.store);
  kept!.db.close();
  const note = `${st.kept} versions kept (v${st.oldest}–${st.version}); the floor holds v${first}–${s.version}, not vacuumed ` +
    `(the state copied in key order, every row of it with version ${first}, then ${keep - 1} versions of changes)`;
  b.row(`  disk after those ${versions} versions: store folder after its automatic prunes and a flush`, mib(storeBytes), "MiB",
    floorOf(`plain rowid (key, version, value) table of the kept rows`, mib(bytesOf(keptFile))), { target: 1.3, note });
}

/** The kept rows' table, with the plain tables' state at version `first`, each row at that version. */
function keptState(s: Scale, file: string, first: number): Plain {
  checkFree(s.dir);
  const kept = new Plain(file, "rowid", true);
  kept.db.pragma("journal_mode = DELETE"); // new pages need no journal, while a WAL would take a copy of every one
  kept.db.prepare("ATTACH DATABASE ? AS p").run(layoutFile(s.dir, "plain", "without rowid"));
  const copied = kept.db.prepare("INSERT INTO main.kv SELECT key, ?, value FROM p.kv").run(first).changes;
  kept.db.exec("DETACH DATABASE p");
  if (copied !== s.size) throw new Error(`bench: copied ${copied} rows of ${s.size}`);
  return kept;
}
