/**
 * What the read check costs a get (issue "Never a wrong answer"): one process, one store grown as the scale bench
 * grows it (`SCALE_KEYS` keys, default 1M, 10,000 a version) beside the two plain tables, then rounds of 1,000 random
 * live keys read five ways, rotated so that no way always follows another's cache misses, each way with keys of its
 * own and the two raw statements each on a connection of its own (with the store's cache size), so that no way reads
 * pages another just brought into its cache:
 *
 * - `Tree.get` (the API: the index seek, the row, its checksum);
 * - the same statement on a raw connection, the row checked by its sum as the store checks it;
 * - the same statement without the check (the value alone);
 * - the plain rowid and WITHOUT ROWID tables' lookups (the scale bench's floors).
 *
 * `npx tsx --expose-gc bench/get-check.ts`: prints the medians (ns a get) and the ratios to the faster plain table.
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { Tree } from "../src/index.js";
import { rowSum } from "../src/sqlite/row-sum.js";
import { layoutFile, LAYOUTS, Plain } from "./floors.js";
import { grown, keyOf } from "./scale-data.js";
import { nsPerGet, rotated } from "./timing.js";

const KEYS = Number(process.env["SCALE_KEYS"] ?? 1_000_000);
const PER_VERSION = 10_000;
const ROUNDS = 15;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "iavlite-get-check-"));
  try {
    const store = join(dir, "store");
    const tree = Tree.open(store);
    const plains = LAYOUTS.map((l) => new Plain(layoutFile(dir, "plain", l), l));
    for (let v = 1; v <= KEYS / PER_VERSION; v++) {
      const changes = grown(v, PER_VERSION);
      for (const c of changes) tree.set(c.key, c.value!);
      tree.commit();
      for (const p of plains) p.put(changes);
    }
    process.stdout.write(`grown to ${tree.size} keys at version ${tree.version}\n`);
    const raws = [0, 1].map(() => {
      const db = new Database(join(store, "iavl.sqlite"), { readonly: true });
      db.pragma("cache_size = -32768");
      return db;
    });
    const q = "FROM leaves WHERE key = ? AND version <= ? ORDER BY version DESC LIMIT 1";
    const checked = raws[0]!.prepare(`SELECT version, value, sum ${q}`).raw();
    const bare = raws[1]!.prepare(`SELECT value ${q}`).pluck();
    const top = Number.MAX_SAFE_INTEGER;
    const checkedGet = (k: Uint8Array): Uint8Array => {
      const [version, value, sum] = checked.get(k, top) as [number, Uint8Array, number];
      if (rowSum(k, version, value) !== sum) throw new Error("bench: a row does not match its sum");
      return value;
    };
    let seed = 1;
    const keysOf = (): Uint8Array[] =>
      Array.from({ length: 1_000 }, () => keyOf((seed = (seed * 48_271) % 2_147_483_647) % KEYS));
    const names = ["Tree.get", "statement + check", "statement alone", ...LAYOUTS.map((l) => `plain ${l}`)];
    const r = await rotated(ROUNDS, 2, () => {
      const [a, b, c] = [keysOf(), keysOf(), keysOf()];
      return [
        () => nsPerGet(a, (k) => tree.get(k)),
        () => nsPerGet(b, checkedGet),
        () => nsPerGet(c, (k) => bare.get(k, top)),
        ...plains.map((p) => {
          const keys = keysOf();
          return () => nsPerGet(keys, (k) => p.get(k));
        }),
      ];
    });
    const medians = r.map(median);
    const floor = Math.min(...medians.slice(3));
    names.forEach((n, i) => process.stdout.write(`${n.padEnd(24)} ${medians[i]!.toFixed(0).padStart(7)} ns  ${(medians[i]! / floor).toFixed(2)}× the faster plain table\n`));
    process.stdout.write(`the check: ${(medians[1]! - medians[2]!).toFixed(0)} ns a get; Tree.get beyond the bare statement: ${(medians[0]! - medians[2]!).toFixed(0)} ns\n`);
    for (const db of raws) db.close();
    tree.close();
    for (const p of plains) p.db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
