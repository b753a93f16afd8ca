/**
 * Long history, the scale section's last part (bench/scale.ts): the mixed profile ×0.3 as bench/mixed.ts runs it
 * (three `Tree.open` stores, values ÷10: at full size 10,000 versions hold ~6M keys, over 100 GB here) for 10,000
 * versions (quick: 300; SCALE_KEYS=n: n / 1,000) with keepRecent 1,000 (quick: 50; SCALE_KEYS: a tenth of the versions). Over the last 5,000 versions (quick: 150), in windows of 1,000 (quick: 30): the commit rate and
 * the three store folders' size at each window's end. The last window is measured against the one before: with the
 * automatic prunes keeping up, history should neither slow the commits nor pile up on disk (the live state still
 * grows with the profile's creates). No plain floor: the store is its own.
 * @module
 */
import { floorOf, type Bench } from "./report.js";
import { scaleSizes } from "./scale-data.js";
import { load, rate, replay, scaled, treeSubject } from "./subjects.js";
import { bytesOf, checkFree, int, mib, sum } from "./timing.js";
import { MIXED, Workload } from "./workload.js";

const SEED = 41;

export async function history(b: Bench): Promise<void> {
  const profiles = scaled(MIXED, { initialSize: 0.3 * 35_000, values: 10 });
  const full = Math.min(10_000, scaleSizes().at(-1)! / 1_000);
  const [versions, keep, window] = [b.q(300, full), b.q(50, full / 10), b.q(30, full / 10)];
  const from = versions - 5 * window;
  const dir = b.dir("scale-history");
  const w = new Workload(profiles, SEED);
  b.log(`long history: mixed ×0.3, ${versions} versions with keepRecent ${keep}`);
  const s = treeSubject(dir, w.storeNames, { keepRecent: keep });
  const tree = s.trees[0]!;
  await load(w, [s]);
  // At each window's end: the version, the store folders' size and the live keys.
  const ends: Array<{ v: number; bytes: number; live: number }> = [];
  const t = await replay(b, w, versions, [s], (_, i) => {
    if (i % 100 === 0) checkFree(dir);
    if (i + 1 <= from || (i + 1 - from) % window !== 0) return;
    ends.push({ v: tree.version, bytes: bytesOf(dir), live: sum(w.storeNames.map((n) => w.liveCount(n))) });
  });
  const oldest = s.trees.map((x) => x.versions()[0]!);
  s.close();

  const rates = ends.map((_, k) => rate(t, 0, from + k * window, from + (k + 1) * window));
  const [last, before] = [ends.length - 1, ends.length - 2];
  const span = (k: number): string => `v${int(ends[k]!.v - window + 1)}–${int(ends[k]!.v)}`;
  const each = ends.map((e, k) => `${span(k)} ${int(rates[k]!)} ops/s, ${int(mib(e.bytes))} MiB`).join("; ");
  b.row(`long history, mixed ×0.3, keepRecent ${int(keep)}: ${span(last)} of ${int(versions + 1)} versions`, rates[last]!, "ops/s",
    floorOf(`the window before, ${span(before)}`, rates[before]!), { target: 1 / 0.9, note: `windows: ${each}` });
  const kept = ends[last]!.v - keep + 1;
  const note = `live keys ×${(ends[last]!.live / ends[before]!.live).toFixed(3)} (${int(ends[before]!.live)} → ` +
    `${int(ends[last]!.live)}); automatic prunes: oldest kept ${oldest.map((o) => `v${int(o)}`).join(", ")} at v${int(ends[last]!.v)} ` +
    `(keepRecent alone would keep v${int(kept)} on; the policy prunes in steps of ${keep / 10}: ` +
    `${oldest.every((o) => kept - o <= keep / 10) ? "kept up" : `behind by up to ${int(kept - Math.min(...oldest))} versions`})`;
  b.row(`  disk at v${int(ends[last]!.v)}: the three store folders, open`, mib(ends[last]!.bytes), "MiB",
    floorOf(`at v${int(ends[before]!.v)}`, mib(ends[before]!.bytes)), { target: 1.1, note });
}
