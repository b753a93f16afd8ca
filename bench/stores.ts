/**
 * Shared helpers of the persistent benches: scratch folders under bench/out, the plain SQLite key-value floor, the
 * three-store mixed profile applied to `Tree.open` stores, and small measuring aids (RSS, folder sizes).
 *
 * The mixed profile runs as three separate stores, one `Tree.open` folder per store (bank, lockup, staking), as a
 * Cosmos multistore keeps one IAVL tree per module; each version commits all three. Its floor is three plain tables,
 * one SQLite file per store, each version one transaction per store.
 * @module
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import Database from "better-sqlite3";
import { Tree, type OpenOptions } from "../src/index.js";
import type { Change, StoreProfile, Workload } from "./workload.js";

/** bench/out, where scratch stores live (each run deletes its own). */
export const OUT_DIR = fileURLToPath(new URL("./out/", import.meta.url));

/** A fresh scratch folder `bench/out/tmp-<name>-XXXXXX`. */
export function scratchDir(name: string): string {
  mkdirSync(OUT_DIR, { recursive: true });
  return mkdtempSync(join(OUT_DIR, `tmp-${name}-`));
}

/** Deletes a scratch folder and everything in it. */
export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** Total bytes of the files under `dir` (recursively; or of `dir` itself when it is a file); 0 when it is missing. */
export function dirBytes(dir: string): number {
  if (!existsSync(dir)) return 0;
  if (!statSync(dir).isDirectory()) return statSync(dir).size;
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) n += dirBytes(p);
    else if (e.isFile()) n += statSync(p).size;
  }
  return n;
}

/** Copies the store files (iavl.sqlite and its -wal/-shm, never the writer lock) of a closed store folder. */
export function copyStore(from: string, to: string): void {
  mkdirSync(to, { recursive: true });
  for (const f of readdirSync(from)) if (f.startsWith("iavl.sqlite")) copyFileSync(join(from, f), join(to, f));
}

/** Resident set size in MiB. */
export function rssMiB(): number {
  return process.memoryUsage.rss() / 2 ** 20;
}

/** RSS split (MiB) from /proc/self/status: anonymous memory and mapped files (SQLite mmap, the node binary). */
export function rssSplit(): { rss: number; anon: number; file: number } {
  let text = "";
  try {
    text = readFileSync("/proc/self/status", "utf8");
  } catch {
    return { rss: rssMiB(), anon: Number.NaN, file: Number.NaN };
  }
  const kib = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+)`, "m").exec(text)?.[1] ?? Number.NaN);
  return { rss: kib("VmRSS") / 1024, anon: kib("RssAnon") / 1024, file: kib("RssFile") / 1024 };
}

/** Lets the event loop run (background prunes, workers' messages) between versions, as a real node would. */
export async function tick(): Promise<void> {
  await yieldToLoop();
}

/** MiB with one decimal, for notes. */
export function mib(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

// ---------------------------------------------------------------------------------------------------------------------
// A grown store handed from one section to another

/** A BANK store grown by commits, which the state-sync section may export instead of building its own. */
export interface GrownStore {
  /** The store folder (`Tree.open`), in a scratch folder of its own. */
  dir: string;
  keys: number;
  /** set/remove + commit time of the versions that built it (the initial load excluded), and their counts. */
  buildNs: number;
  ops: number;
  versions: number;
}

let grown: GrownStore | undefined;

/** Offers a grown store to later sections; it is deleted at process exit if nobody takes it. */
export function shareGrown(g: GrownStore): void {
  grown = g;
  process.once("exit", () => removeDir(dirname(g.dir)));
}

/** Takes the shared grown store when one of `keys` keys is on offer; the taker deletes it (removeDir(dirname(dir))). */
export function takeGrown(keys: number): GrownStore | undefined {
  if (grown?.keys !== keys) return undefined;
  const g = grown;
  grown = undefined;
  return g;
}

// ---------------------------------------------------------------------------------------------------------------------
// The plain key-value floor

/**
 * A plain SQLite key-value table, `kv (key BLOB PRIMARY KEY, value BLOB) WITHOUT ROWID`, WAL, synchronous=NORMAL,
 * and the same cache/mmap settings as the tree's own connections (src/sqlite/connection.ts), so the floor is not
 * handicapped by a smaller page cache.
 */
export class PlainKv {
  readonly db: Database.Database;
  private readonly putStmt: Database.Statement;
  private readonly delStmt: Database.Statement;
  private readonly getStmt: Database.Statement;
  private readonly applyTx: Database.Transaction<(changes: readonly Change[]) => void>;

  /** `mmap: false` keeps the table's pages out of this process's RSS (for the RSS measurement); default true. */
  constructor(
    readonly file: string,
    opts: { mmap?: boolean } = {},
  ) {
    this.db = new Database(file);
    this.db.pragma("journal_mode = WAL");
    this.db.pragma("synchronous = NORMAL");
    this.db.pragma("cache_size = -65536");
    this.db.pragma("temp_store = MEMORY");
    this.db.pragma(`mmap_size = ${opts.mmap === false ? 0 : 268435456}`);
    this.db.exec("CREATE TABLE IF NOT EXISTS kv (key BLOB PRIMARY KEY, value BLOB) WITHOUT ROWID");
    this.putStmt = this.db.prepare("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)");
    this.delStmt = this.db.prepare("DELETE FROM kv WHERE key = ?");
    this.getStmt = this.db.prepare("SELECT value FROM kv WHERE key = ?").pluck();
    this.applyTx = this.db.transaction((changes: readonly Change[]) => {
      for (const c of changes) {
        if (c.delete) {
          if (this.delStmt.run(c.key).changes !== 1) throw new Error("bench: plain table delete of a live key found nothing");
        } else {
          this.putStmt.run(c.key, c.value);
        }
      }
    });
  }

  /** Applies `changes` in one write transaction. */
  apply(changes: readonly Change[]): void {
    this.applyTx.immediate(changes);
  }

  /** The raw point lookup the tree's get is measured against. */
  get(key: Uint8Array): Uint8Array | undefined {
    return this.getStmt.get(key) as Uint8Array | undefined;
  }

  close(): void {
    this.db.close();
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Applying changes to trees

/** Applies `changes` to `tree` (set, or remove a key that must be present). */
export function applyToTree(tree: Tree, changes: readonly Change[]): void {
  for (const c of changes) {
    if (c.delete) {
      if (!tree.remove(c.key)) throw new Error("bench: tree remove of a live key found nothing");
    } else {
      tree.set(c.key, c.value!);
    }
  }
}

/** Applies one version's per-store changes (as {@link byStore} splits them) to `trees`, then commits each tree. */
export function commitVersion(trees: readonly Tree[], groups: readonly (readonly Change[])[]): void {
  for (let i = 0; i < trees.length; i++) applyToTree(trees[i]!, groups[i]!);
  for (const t of trees) t.commit();
}

/** Splits one version's interleaved changes by store, keeping each store's order (which is all the shape needs). */
export function byStore(names: readonly string[], changes: readonly Change[]): Change[][] {
  const idx = new Map(names.map((n, i) => [n, i]));
  const out = names.map((): Change[] => []);
  for (const c of changes) {
    const i = idx.get(c.store);
    if (i === undefined) throw new Error(`bench: change for unknown store ${c.store}`);
    out[i]!.push(c);
  }
  return out;
}

/** One `Tree.open` store per profile, in `dir/<store name>`. */
export function openStores(dir: string, names: readonly string[], options?: OpenOptions): Tree[] {
  return names.map((n) => Tree.open(join(dir, n), options));
}

/** One plain table per store, in `dir/plain-<store name>.sqlite`. */
export function openPlains(dir: string, names: readonly string[]): PlainKv[] {
  mkdirSync(dir, { recursive: true });
  return names.map((n) => new PlainKv(join(dir, `plain-${n}.sqlite`)));
}

/**
 * Streams the workload's initial load (version 1) into `trees` (and `plains`, when given), then commits each tree.
 * Values pass through once; nothing of the ~1.2 GB load is kept by the bench.
 */
export function loadInitial(w: Workload, names: readonly string[], trees: readonly Tree[], plains?: readonly PlainKv[]): void {
  const idx = new Map(names.map((n, i) => [n, i]));
  const pending = names.map((): Change[] => []);
  const flush = (i: number): void => {
    const batch = pending[i]!;
    applyToTree(trees[i]!, batch);
    plains?.[i]!.apply(batch);
    pending[i] = [];
  };
  for (const c of w.initial()) {
    const i = idx.get(c.store)!;
    pending[i]!.push(c);
    if (pending[i]!.length >= 2_000) flush(i);
  }
  for (let i = 0; i < names.length; i++) flush(i);
  for (const t of trees) t.commit();
}

/** Profiles with every value length (mean and spread) divided by `divisor`: the same op mix, less disk. */
export function scaleValues(profiles: readonly StoreProfile[], divisor: number): StoreProfile[] {
  return profiles.map((p) => ({ ...p, valueMean: p.valueMean / divisor, valueStdDev: p.valueStdDev / divisor }));
}

/** Profiles with a different initial size (the quick runs load less). */
export function withInitialSize(profiles: readonly StoreProfile[], initialSize: number): StoreProfile[] {
  return profiles.map((p) => ({ ...p, initialSize }));
}

/** Profiles with op counts (changes and growth per version) divided by `divisor`; initial sizes unchanged. */
export function scaleOps(profiles: readonly StoreProfile[], divisor: number): StoreProfile[] {
  return profiles.map((p) => ({
    ...p,
    changesPerVersion: Math.max(1, Math.round(p.changesPerVersion / divisor)),
    growthPerVersion: (p.growthPerVersion ?? 0) / divisor,
  }));
}

/** Number of changes in a list of per-store change lists. */
export function countChanges(groups: readonly (readonly Change[])[]): number {
  let n = 0;
  for (const g of groups) n += g.length;
  return n;
}
