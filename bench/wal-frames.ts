/**
 * Where a churn version's writes go: WAL frames (pages written) per version, by table, for the store and for the
 * plain floors, on the scale section's data (bench/scale-data.ts). A probe, not a section of `npm run bench`:
 *
 *     npx tsx bench/wal-frames.ts [--keys 1000000] [--versions 100] [--keep 100] [--from <grown store folder>]
 *
 * - The store grows `keys` keys, 10,000 a version, into a scratch folder (or copies `--from`), then churns twice,
 *   `versions` versions each, with its WAL never checkpointed (walCheckpoints "external"), so that the WAL holds every
 *   page written: first with no prune (the commits' own frames), then reopened with keepRecent `keep` (the commits'
 *   and the automatic prunes' together; the prunes' share is the difference).
 * - Each frame's page is given to the table (or index) that holds it at the end of the phase (`dbstat`); a page
 *   freed and taken by another table meanwhile counts for the later one. Pages no table holds are pointer-map pages
 *   (auto-vacuum's, at fixed places) or free-list pages.
 * - The floors: both plain layouts grown as the store was, then fed the same churn with autocheckpoint off. The
 *   churn's keys are the scale data's, so a store given by `--from` must have been grown with them (the scale bench's).
 * @module
 */
import { cpSync, mkdtempSync, openSync, readSync, closeSync, fstatSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import Database from "better-sqlite3";
import { Tree } from "../src/index.js";
import { layoutFile, LAYOUTS, Plain } from "./floors.js";
import { Churn, grown } from "./scale-data.js";

const WAL_HEADER = 32;
const FRAME_HEADER = 24;
const PAGE = 4096;
/** Pages a pointer-map page covers with 4 KiB pages (5 bytes an entry), plus itself. */
const PTRMAP_EVERY = Math.floor(PAGE / 5) + 1;

/** Frames of the WAL at `wal` by the table holding each page in `dbFile` now. */
function framesByTable(dbFile: string, wal: string): Map<string, number> {
  const db = new Database(dbFile, { readonly: true });
  const owner = new Map<number, string>();
  for (const r of db.prepare("SELECT name, pageno FROM dbstat").all() as Array<{ name: string; pageno: number }>) owner.set(r.pageno, r.name);
  db.close();
  const counts = new Map<string, number>();
  const fd = openSync(wal, "r");
  const size = fstatSync(fd).size;
  const header = Buffer.alloc(FRAME_HEADER);
  for (let at = WAL_HEADER; at + FRAME_HEADER + PAGE <= size; at += FRAME_HEADER + PAGE) {
    readSync(fd, header, 0, FRAME_HEADER, at);
    const page = header.readUInt32BE(0);
    const name = owner.get(page) ?? ((page - 2) % PTRMAP_EVERY === 0 ? "(pointer map)" : "(free list)");
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  closeSync(fd);
  return counts;
}

/** Churns `versions` versions in the store at `dir` (opened with `keepRecent`, if any); its WAL's frames by table. */
async function churnStore(dir: string, churn: Churn, from: number, versions: number, keepRecent?: number): Promise<Map<string, number>> {
  // Start from an empty WAL: what the growth or an earlier phase wrote is not this phase's.
  const db = new Database(join(dir, "iavl.sqlite"));
  db.pragma("wal_checkpoint(TRUNCATE)");
  db.close();
  const t = Tree.open(dir, { walCheckpoints: "external", ...(keepRecent === undefined ? {} : { keepRecent }) });
  for (let v = from; v < from + versions; v++) {
    for (const c of churn.version(v)) {
      if (c.delete) t.remove(c.key);
      else t.set(c.key, c.value!);
    }
    t.commit();
  }
  // The prune the automatic ones would reach next, awaited: what they owe is counted, and nothing runs on.
  if (keepRecent !== undefined) await t.prune(t.version - keepRecent);
  // Read before the close, whose checkpoint may empty the WAL.
  const counts = framesByTable(join(dir, "iavl.sqlite"), join(dir, "iavl.sqlite-wal"));
  t.close();
  return counts;
}

function print(title: string, counts: Map<string, number>, versions: number): void {
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  console.log(`${title}: ${Math.round(total / versions)} frames a version`);
  for (const [name, n] of [...counts].sort((a, b) => b[1] - a[1])) console.log(`  ${String(Math.round(n / versions)).padStart(6)}  ${name}`);
}

const { values: o } = parseArgs({
  options: { keys: { type: "string", default: "1000000" }, versions: { type: "string", default: "100" }, keep: { type: "string", default: "100" }, from: { type: "string" } },
});
const [keys, versions, keep] = [Number(o.keys), Number(o.versions), Number(o.keep)];
const scratch = mkdtempSync(join(tmpdir(), "iavlite-wal-frames-"));
const dir = join(scratch, "store");
try {
  if (o.from !== undefined) cpSync(o.from, dir, { recursive: true });
  const t = Tree.open(dir);
  if (o.from === undefined) {
    for (let v = 1; v * 10_000 <= keys; v++) {
      for (const c of grown(v, 10_000)) t.set(c.key, c.value!);
      t.commit();
    }
  }
  const size = t.size;
  console.log(`${size} keys; ${versions} churn versions a phase, about ${new Churn(size).version(1).length} changes each`);
  // The floors first, from the grown state, fed the versions the store's first phase takes.
  const floors: Array<[string, Map<string, number>]> = [];
  for (const l of LAYOUTS) {
    const file = layoutFile(scratch, "floor", l);
    const p = new Plain(file, l);
    // Grown as the store was (and as the scale bench grows its floors): key order would pack the table tighter.
    for (let v = 1; v * 10_000 <= size; v++) p.put(grown(v, 10_000));
    p.db.pragma("wal_checkpoint(TRUNCATE)");
    p.db.pragma("wal_autocheckpoint = 0");
    const churn = new Churn(size);
    for (let v = 1; v <= versions; v++) p.put(churn.version(v));
    // Read before the close, whose checkpoint empties the WAL.
    floors.push([`plain ${l} floor`, framesByTable(file, `${file}-wal`)]);
    p.db.close();
    rmSync(file);
    rmSync(`${file}-wal`, { force: true });
  }
  t.close();
  const churn = new Churn(size);
  print("store, commits alone (no prune)", await churnStore(dir, churn, 1, versions), versions);
  print(`store, commits and automatic prunes (keepRecent ${keep})`, await churnStore(dir, churn, versions + 1, versions, keep), versions);
  for (const [title, counts] of floors) print(title, counts, versions);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
