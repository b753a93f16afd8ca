/**
 * Pages (`npm run bench -- --only pages`): what issue 38's "pages" layout would cost, measured in counters before it
 * is built (bench/page-probe.ts holds the model). The scale section's shape in a tree in memory driven by the exact
 * mutator: growth to 1M keys (quick: 50k) of the bank's 56-byte keys, 10,000 a version, then 200 versions (quick:
 * 30) of the scale churn (bench/scale-data.ts: 1,500 updates, 500 removes and 500 creates of 2,500 changes), with a
 * checkpoint at the end of growth (the scale churn reopens its store, and a close checkpoints) and every 100
 * versions after, as `Tree.open` does. For page sizes L = 8, 16, 32:
 *
 * - at the end of growth and of the churn: pages per key, leaves per page, spine nodes, page row bytes;
 * - per change of the churn: pages read (a) with only the spine resident, (b) with the pages read since the last
 *   checkpoint resident too, against today's rows read (every stored node touched) with as many of the top levels
 *   resident as the spine has nodes; how often a change reads more than one page, and how often its rotations read
 *   a page other than the changed leaf's;
 * - page writes per change at checkpoints against today's branch rows written.
 *
 * PAGES_KEYS=n in the environment grows to n keys instead (a multiple of 10,000).
 * @module
 */
import { latin1 } from "../src/base/bytes.js";
import { ChangeCounts, KINDS, PageProbe, type CheckpointStats } from "./page-probe.js";
import { floorOf, fmt, type Bench } from "./report.js";
import { Churn, keyOf } from "./scale-data.js";
import { int } from "./timing.js";

const SIZES = [8, 16, 32];
/** Tree.open's default checkpointInterval. */
const CHECKPOINTS = 100;
const PER_VERSION = 10_000;
/** Every leaf's value: values never reach a page (they stay in the leaves rows), and only their hash is hashed. */
const VALUE = new Uint8Array(8);
/** Bytes a spine node would hold: its children's hash, height, size and page id (2 × 41), and its key (56). */
const SPINE_NODE_BYTES = 2 * 41 + 56;

export async function pages(b: Bench): Promise<void> {
  const [keys, versions] = [keyCount(b), b.q(30, 200)];
  const probe = new PageProbe(SIZES, CHECKPOINTS);
  b.log(`grow to ${int(keys)} keys, ${int(PER_VERSION)} a version, in memory`);
  const t0 = performance.now();
  for (let v = 1; v <= keys / PER_VERSION; v++) {
    for (let i = (v - 1) * PER_VERSION; i < v * PER_VERSION; i++) probe.set(latin1(keyOf(i)), VALUE);
    probe.commit();
    if (v % 10 === 0) b.log(`  ${int(probe.keys)} keys, ${((performance.now() - t0) / 1e3).toFixed(0)} s`);
  }
  probe.checkpoint();
  const grown = probe.checkpoints.map((c) => c[c.length - 1]!);
  b.log(`churn: ${versions} versions from v${probe.version + 1}, checkpoints every ${CHECKPOINTS}`);
  const churn = new Churn(keys);
  for (let k = 1; k <= versions; k++) {
    for (const c of churn.version(probe.version + 1)) {
      const key = latin1(c.key);
      if (!c.delete) probe.set(key, VALUE);
      else if (!probe.remove(key)) throw new Error("bench: the churn removed a key the tree does not hold");
    }
    probe.commit();
    if (k % Math.ceil(versions / 10) === 0) b.log(`  ${k} of ${versions} versions, ${((performance.now() - t0) / 1e3).toFixed(0)} s`);
  }
  probe.checkpoint();
  if (probe.hashOpens !== 0) throw new Error(`bench: hashing read ${probe.hashOpens} stored nodes' own records`);
  const churned = probe.checkpoints.map((c) => c[c.length - 1]!);

  const summary: string[] = [];
  SIZES.forEach((L, j) => {
    shapeRows(b, `L=${L} after growth to ${int(keys)} keys`, grown[j]!);
    shapeRows(b, `L=${L} after ${versions} churn versions`, churned[j]!);
    const all = new ChangeCounts();
    probe.counts[j]!.forEach((k) => all.merge(k));
    const cps = probe.checkpoints[j]!.filter((c) => c.dirtyPages !== undefined);
    summary.push(churnRows(b, L, all, probe.counts[j]!, cps, grown[j]!, churned[j]!));
  });
  b.note(`churn: the scale section's mix (1,500 updates, 500 removes, 500 creates a version); ${int(probe.keys)} keys at the end`);
  b.note("pages read = distinct pages of the last checkpoint holding a stored node whose own record (links, key, version) the mutator read; " +
    "the height, size and hash of a page root are its spine parent's; hashing each change's path read none (checked)");
  for (const line of ["L   pages/key  leaves/page mean (min-max)  spine/key  row bytes mean/max  >4000  >8000 | (a) mean/p99  " +
    "(b) mean/p99  cold mean/p99  >1 page  rotation next page  writes/change |  today (a)         (b)      cold  writes/change", ...summary]) {
    b.log(line);
  }
}

function keyCount(b: Bench): number {
  const env = process.env["PAGES_KEYS"];
  if (env === undefined) return b.q(50_000, 1_000_000);
  const n = Number(env);
  if (!Number.isInteger(n) || n < PER_VERSION || n % PER_VERSION !== 0) throw new Error("bench: PAGES_KEYS must be a multiple of 10,000");
  return n;
}

/** Pages, spine and row bytes of one checkpoint. */
function shapeRows(b: Bench, label: string, c: CheckpointStats): void {
  const perKey = (n: number): string => (n / c.keys).toFixed(3);
  b.row(`${label}: pages`, c.pages, "pages", floorOf("keys", c.keys), {
    note: `${perKey(c.pages)} pages per key; leaves per page mean ${(c.keys / c.pages).toFixed(1)}, min ${c.leavesMin}, max ${c.leavesMax}`,
  });
  b.row("  spine nodes", c.spine, "nodes", floorOf("keys", c.keys), {
    note: `${perKey(c.spine)} per key; ${(c.spine * SPINE_NODE_BYTES / 2 ** 20).toFixed(1)} MiB at ${SPINE_NODE_BYTES} B a node`,
  });
  b.row("  page row bytes, mean", c.bytesMean, "B", floorOf("SQLite's local payload limit with 4 KiB pages, about", 4000), {
    note: `max ${int(c.bytesMax)} B; ${int(c.over4000)} pages over 4,000 B, ${int(c.over8000)} over 8,000 B`,
  });
}

/** The churn's rows for page size L; returns its line of the summary. */
function churnRows(b: Bench, L: number, all: ChangeCounts, byKind: ChangeCounts[], cps: CheckpointStats[], grown: CheckpointStats, end: CheckpointStats): string {
  const n = all.pagesA.n;
  const pct = (x: number, of = n): string => `${((100 * x) / of).toFixed(1)} %`;
  const split = (pick: (k: ChangeCounts) => string): string => byKind.map((k, i) => `${KINDS[i]}s ${pick(k)}`).join(", ");
  const mp = (t: ChangeCounts["pagesA"]): string => `${t.mean.toFixed(2)} (p99 ${t.quantile(0.99)})`;
  const depths = [...new Set([grown, ...cps].map((c) => c.residentDepth))].join("/");
  b.row(`L=${L} churn: pages read per change, only the spine resident (a)`, all.pagesA.mean, "reads",
    floorOf(`today's layout: stored rows touched, top ${depths} levels resident`, all.rowsA.mean), {
      note: `p99 ${all.pagesA.quantile(0.99)}, max ${all.pagesA.max} (today ${mp(all.rowsA)}); ${split((k) => mp(k.pagesA))}; ` +
        `today ${split((k) => mp(k.rowsA))}; ${all.sqliteA.mean.toFixed(2)} SQLite pages (4 KiB, overflow included) per change; ` +
        `${pct(all.multi)} of changes read more than one page; ` +
        `${all.pagesObtained.mean.toFixed(2)} if the spine and pages held no child summaries (every child handed out read)`,
    });
  const cold = all.coldPages.n;
  b.row("  pages read per change past the memory budget (a), over the changes whose leaf's page was stored", all.coldPages.mean, "reads",
    floorOf("today's layout: rows read by the same changes", all.coldRows.mean), {
      note: `${pct(cold)} of the changes; p99 ${all.coldPages.quantile(0.99)} (today ${mp(all.coldRows)}); ${split((k) => mp(k.coldPages))}; ` +
        `today ${split((k) => mp(k.coldRows))}; ${all.coldSqlite.mean.toFixed(2)} SQLite pages (4 KiB, overflow included) per change; ` +
        "target ≤ 1.3 rows per change",
    });
  b.row("  pages read per change, pages read since the checkpoint resident too (b)", all.pagesB.mean, "reads",
    floorOf("today's layout: rows read, rows read since the checkpoint resident too", all.rowsB.mean), {
      note: `p99 ${all.pagesB.quantile(0.99)} (today ${mp(all.rowsB)}); ${split((k) => mp(k.pagesB))}; today ${split((k) => mp(k.rowsB))}; ` +
        `${all.sqliteB.mean.toFixed(2)} SQLite pages (4 KiB, overflow included) per change`,
    });
  b.row("  changes whose rotations read a page other than the changed leaf's", all.foreign, "changes", floorOf("changes", n), {
    note: `${pct(all.foreign)}; ${split((k) => pct(k.foreign, k.pagesA.n))}; more than one page read: ${split((k) => pct(k.multi, k.pagesA.n))}; ` +
      `descent in memory (no page read): ${pct(all.inMemory)}`,
  });
  const [changes, dirty, branches] = [sumOf(cps, (c) => c.changes), sumOf(cps, (c) => c.dirtyPages!), sumOf(cps, (c) => c.dirtyBranches!)];
  b.row("  page writes per change at checkpoints", dirty / changes, "writes", floorOf("today's layout: branch rows written per change", branches / changes), {
    note: cps.map((c) => `v${c.version}: ${int(c.dirtyPages!)} pages, ${int(c.dirtyBranches!)} branches for ${int(c.changes)} changes`).join("; "),
  });
  const m = (t: ChangeCounts["pagesA"]): string => `${t.mean.toFixed(2)}/${t.quantile(0.99)}`;
  return [
    String(L).padEnd(3), (end.pages / end.keys).toFixed(3).padStart(9), `${(end.keys / end.pages).toFixed(1)} (${end.leavesMin}-${end.leavesMax})`.padStart(26),
    (end.spine / end.keys).toFixed(3).padStart(10), `${fmt(end.bytesMean)}/${int(end.bytesMax)}`.padStart(19), int(end.over4000).padStart(6),
    int(end.over8000).padStart(6), "|", m(all.pagesA).padStart(13), m(all.pagesB).padStart(13), m(all.coldPages).padStart(14),
    pct(all.multi).padStart(8), pct(all.foreign).padStart(19), (dirty / changes).toFixed(3).padStart(14), "|", m(all.rowsA).padStart(10),
    m(all.rowsB).padStart(10), m(all.coldRows).padStart(10), (branches / changes).toFixed(3).padStart(14),
  ].join(" ");
}

const sumOf = <T>(xs: readonly T[], f: (x: T) => number): number => xs.reduce((s, x) => s + f(x), 0);
