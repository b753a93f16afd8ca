/**
 * The bench harness. Every figure is a ratio to a floor measured in the same run (SPEC §7), never a bare time, so a
 * noisy shared machine moves both sides alike. Sections only describe their workload; this module owns the rest:
 * timing, the report, scratch folders, the plain SQLite floors (both layouts measured, the faster one used),
 * replaying a workload into several subjects version by version, the sha256 floor, the GC share and child processes.
 * @module
 */
import crypto from "node:crypto";
import { fork, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import os from "node:os";
import { join } from "node:path";
import { PerformanceObserver } from "node:perf_hooks";
import { setImmediate as tick } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { Tree, type OpenOptions } from "../src/index.js";
import type { Change, StoreProfile, Workload } from "./workload.js";

export const OUT = fileURLToPath(new URL("./out/", import.meta.url));
export { tick };

// ---- timing and small helpers ---------------------------------------------------------------------------------------

export function timeNs(fn: () => unknown): number {
  const t0 = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t0);
}

export async function timeNsAsync(fn: () => unknown): Promise<number> {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0);
}

/** The `p`-quantile of `xs`, linear between order statistics. */
export function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  const at = p * (s.length - 1);
  const lo = Math.floor(at);
  return s[lo]! + (s[Math.ceil(at)]! - s[lo]!) * (at - lo);
}

export const median = (xs: readonly number[]): number => percentile(xs, 0.5);
export const sum = (xs: readonly number[]): number => xs.reduce((a, x) => a + x, 0);
export const mib = (bytes: number): number => bytes / 2 ** 20;
export const int = (n: number): string => Math.round(n).toLocaleString("en-US");
/** A full collection between phases (the bench runs with --expose-gc). */
export const gc = (): void => globalThis.gc?.();
/** Keeps a result alive so that the optimiser cannot drop the work that made it. */
const sink: unknown[] = [undefined];
export const consume = (x: unknown): void => void (sink[0] = x);

/** Bytes of the files under `path` (or of the file); 0 when missing. */
export function bytesOf(path: string): number {
  if (!existsSync(path)) return 0;
  return statSync(path).isDirectory() ? sum(readdirSync(path).map((f) => bytesOf(join(path, f)))) : statSync(path).size;
}

// ---- the report -----------------------------------------------------------------------------------------------------

/** What a figure is measured against: a floor from the same run (or a fixed target), and a note about it. */
export interface Floor {
  floor: string;
  floorValue: number;
  floorNote?: string;
}

/** One figure. `ratio` is the cost relative to the floor: 1 = as fast as the floor, above 1 = slower. */
export interface Row extends Omit<Floor, "floorNote"> {
  section: string;
  name: string;
  value: number;
  unit: string;
  ratio: number;
  /** Highest acceptable ratio: above it the row is a MISS and the run exits 1. */
  target?: number;
  /** A stricter target a later issue sets: printed, not yet enforced. */
  later?: number;
  pass?: boolean;
  note?: string;
}

export const floorOf = (floor: string, floorValue: number): Floor => ({ floor, floorValue });

/** The run: its options, its rows, and their table (stdout), results.json and results.md. */
export class Bench {
  readonly rows: Row[] = [];
  readonly notes: string[] = [];
  readonly info = {
    date: new Date().toISOString(),
    node: process.version,
    cpu: `${os.cpus()[0]?.model.trim() ?? "?"} × ${os.cpus().length}`,
    argv: process.argv.slice(2),
  };
  section = "";
  private readonly dirs: Array<{ dir: string; untilExit: boolean }> = [];

  constructor(readonly quick: boolean) {}

  /** `quick` on a quick run, `full` otherwise. */
  q<T>(quick: T, full: T): T {
    return this.quick ? quick : full;
  }

  /** Progress goes to stderr: stdout holds only the report. */
  log(text: string): void {
    process.stderr.write(`[${this.section}] ${text}\n`);
  }

  note(text: string): void {
    this.notes.push(`${this.section}: ${text}`);
  }

  /** Adds a figure. Rates (units ending in "/s") are better higher, so their ratio is floor / value. */
  row(name: string, value: number, unit: string, f: Floor, more: Pick<Row, "target" | "later" | "note"> = {}): void {
    const ratio = unit.endsWith("/s") ? f.floorValue / value : value / f.floorValue;
    const note = [more.note, f.floorNote].filter((x) => x !== undefined).join("; ") || undefined;
    const pass = more.target === undefined ? undefined : ratio <= more.target;
    const { floor, floorValue } = f;
    this.rows.push({ section: this.section, name, value, unit, floor, floorValue, ratio, ...more, note, pass });
    this.log(`${name}: ${fmt(value)} ${unit} against ${fmt(f.floorValue)}, ${ratio.toFixed(2)}×`);
  }

  /** A fresh folder under bench/out, deleted after the section (or, `untilExit`, after the run). */
  dir(name: string, untilExit = false): string {
    mkdirSync(OUT, { recursive: true });
    const dir = mkdtempSync(join(OUT, `tmp-${name}-`));
    this.dirs.push({ dir, untilExit });
    return dir;
  }

  cleanup(all: boolean): void {
    for (const d of this.dirs) if (all || !d.untilExit) rmSync(d.dir, { recursive: true, force: true });
  }

  table(): string {
    const head = ["section", "measure", "value", "floor", "floor value", "ratio", "target", ""];
    const cells = this.rows.map((r) => {
      const pass = r.pass === undefined ? "" : r.pass ? "PASS" : "MISS";
      const [value, ratio] = [`${fmt(r.value)} ${r.unit}`, `${r.ratio.toFixed(2)}×`];
      return [r.section, r.name, value, r.floor, fmt(r.floorValue), ratio, targetOf(r), pass];
    });
    const w = head.map((_, c) => Math.max(...[head, ...cells].map((row) => row[c]!.length)));
    const line = (row: string[]): string =>
      row.map((x, c) => ([2, 4, 5].includes(c) ? x.padStart(w[c]!) : x.padEnd(w[c]!))).join("  ").trimEnd();
    return [
      `iavlite bench ${this.info.date} · node ${this.info.node} · ${this.info.cpu} · ${this.info.argv.join(" ")}`,
      "ratio = cost relative to a floor measured in this run (lower is better); ≥ X× throughput is ≤ 1/X× cost",
      "",
      ...[head, w.map((n) => "-".repeat(n)), ...cells].map(line),
      "",
      ...this.rows.filter((r) => r.note !== undefined).map((r) => `* ${r.section} / ${r.name}: ${r.note}`),
      ...this.notes.map((n) => `* ${n}`),
    ].join("\n");
  }

  /** Writes bench/out/results.json and results.md. */
  write(): void {
    const esc = (s: string): string => s.replace(/\|/g, "\\|");
    const md = this.rows.map((r) => {
      const [value, floor] = [`${fmt(r.value)} ${r.unit}`, `${esc(r.floor)}: ${fmt(r.floorValue)}`];
      const target = `${targetOf(r)}${r.pass === undefined ? "" : r.pass ? " ✅" : " ❌"}`;
      return `| ${r.section} | ${esc(r.name)} | ${value} | ${floor} | ${r.ratio.toFixed(2)}× | ${target} |`;
    });
    const { date, cpu, node } = this.info;
    mkdirSync(OUT, { recursive: true });
    const json = JSON.stringify({ info: this.info, rows: this.rows, notes: this.notes }, null, 1);
    writeFileSync(join(OUT, "results.json"), `${json}\n`);
    writeFileSync(join(OUT, "results.md"), [
      `Measured ${date.slice(0, 10)} on ${cpu}, node ${node}. Ratio = cost relative to a floor measured in the same run.`,
      "",
      "| section | measure | value | floor | ratio | target |",
      "|---|---|---:|---|---:|---|",
      ...md,
      "",
    ].join("\n"));
  }
}

function targetOf(r: Row): string {
  const rate = (x: number): string => (r.unit.endsWith("/s") ? ` (≥ ${(1 / x).toFixed(2)}×)` : "");
  const t = (x: number): string => `≤ ${x.toFixed(2)}×${rate(x)}`;
  return r.target === undefined ? "" : r.later === undefined ? t(r.target) : `${t(r.target)}, later ${t(r.later)}`;
}

/** Three significant figures, thousands separated. */
export function fmt(x: number): string {
  const a = Math.abs(x);
  if (a >= 1000 || Number.isInteger(x) || !Number.isFinite(x)) return Number.isFinite(x) ? int(x) : String(x);
  return x.toFixed(a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3);
}

// ---- the plain SQLite floors ----------------------------------------------------------------------------------------

/** The two ways to build a plain key-value table; floors measure both on the same stream and use the faster. */
export type Layout = "rowid" | "without rowid";
export const LAYOUTS: readonly Layout[] = ["rowid", "without rowid"];
export const layoutSql = (l: Layout): string => (l === "rowid" ? "" : " WITHOUT ROWID");
export const layoutFile = (dir: string, name: string, l: Layout): string =>
  join(dir, `${name}-${l.replace(" ", "-")}.sqlite`);
export const perLayout = <T>(f: (l: Layout, i: number) => T): Record<Layout, T> =>
  ({ rowid: f("rowid", 0), "without rowid": f("without rowid", 1) });

/** A SQLite file with the store's settings (src/sqlite/connection.ts): WAL, synchronous NORMAL, 32 MiB of cache. */
export function plainDb(file: string, readonly = false): Database.Database {
  const db = new Database(file, { readonly });
  if (!readonly) db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("cache_size = -32768");
  db.pragma("temp_store = MEMORY");
  return db;
}

/**
 * A plain table `kv (key BLOB PRIMARY KEY, value BLOB)` (upserts, deletes), or `versioned`, `kv (key, version, value)`
 * keyed by (key, version), which keeps every version's value (NULL once deleted). One transaction per `put`.
 */
export class Plain {
  readonly db: Database.Database;
  readonly put: (changes: readonly Change[], version?: number) => void;
  private readonly getStmt: Database.Statement;

  constructor(file: string, readonly layout: Layout, versioned = false) {
    this.db = plainDb(file);
    const [table, key] = versioned
      ? ["key BLOB NOT NULL, version INTEGER NOT NULL, value BLOB, PRIMARY KEY (key, version)", "key, version"]
      : ["key BLOB PRIMARY KEY, value BLOB", "key"];
    this.db.exec(`CREATE TABLE IF NOT EXISTS kv (${table})${layoutSql(layout)}`);
    const upsert = this.db.prepare(`INSERT INTO kv (${key}, value) VALUES (${versioned ? "?, ?, ?" : "?, ?"})
      ON CONFLICT (${key}) DO UPDATE SET value = excluded.value`);
    const del = this.db.prepare("DELETE FROM kv WHERE key = ?");
    this.getStmt = this.db.prepare("SELECT value FROM kv WHERE key = ?").pluck();
    const tx = this.db.transaction((changes: readonly Change[], version?: number) => {
      for (const c of changes) {
        if (versioned) upsert.run(c.key, version, c.delete ? null : c.value);
        else if (!c.delete) upsert.run(c.key, c.value);
        else if (del.run(c.key).changes !== 1) throw new Error("bench: a plain delete of a live key found nothing");
      }
    });
    this.put = (changes, version) => tx.immediate(changes, version);
  }

  get(key: Uint8Array): Uint8Array | undefined {
    return this.getStmt.get(key) as Uint8Array | undefined;
  }
}

/** The faster of the layouts' figures (`unit` tells whether higher is faster) as a floor, with both in its note. */
export function fasterPlain(figs: Record<Layout, number>, unit: string, what: string): Floor {
  const [a, b] = [figs.rowid, figs["without rowid"]];
  const best: Layout = (unit.endsWith("/s") ? a >= b : a <= b) ? "rowid" : "without rowid";
  const note = `plain floors: rowid ${fmt(a)}, without rowid ${fmt(b)} ${unit}`;
  return { floor: `plain SQLite kv (${best}), ${what}`, floorValue: figs[best], floorNote: note };
}

// ---- subjects: what a workload is replayed into ---------------------------------------------------------------------

/** The trees under test or a floor, taking one version at a time: `put` each store's changes, then `commit`. */
export interface Subject {
  put(store: number, changes: readonly Change[]): void;
  commit(): void | Promise<void>;
  close(): void;
}

/** Applies `changes` to a tree; a delete must find its key. */
export function applyToTree(tree: Tree, changes: readonly Change[]): void {
  for (const c of changes) {
    if (!c.delete) tree.set(c.key, c.value!);
    else if (!tree.remove(c.key)) throw new Error("bench: a tree remove of a live key found nothing");
  }
}

/** One `Tree.open` store per name in `dir/<name>`, committed one after another. */
export function treeSubject(dir: string, stores: readonly string[], o?: OpenOptions): Subject & { trees: Tree[] } {
  const trees = stores.map((s) => Tree.open(join(dir, s), o));
  const each = (f: (t: Tree) => unknown) => (): void => trees.forEach(f);
  return {
    trees,
    put: (i, c) => applyToTree(trees[i]!, c),
    commit: each((t) => t.commit()),
    close: each((t) => t.close()),
  };
}

/** One plain kv table per store in `dir`, one transaction per store and version. */
export function plainSubject(dir: string, stores: readonly string[], layout: Layout): Subject & { plains: Plain[] } {
  const plains = stores.map((s) => new Plain(layoutFile(dir, `plain-${s}`, layout), layout));
  const close = (): void => plains.forEach((p) => p.db.close());
  return { plains, put: (i, c) => plains[i]!.put(c), commit: () => undefined, close };
}

/** Streams `w`'s initial load (version 1) into the subjects in batches, then commits each. */
export async function load(w: Workload, subjects: readonly Subject[]): Promise<void> {
  const pending = w.storeNames.map((): Change[] => []);
  const flush = (i: number): void => void (subjects.forEach((s) => s.put(i, pending[i]!)), (pending[i] = []));
  for (const c of w.initial()) {
    const i = w.storeNames.indexOf(c.store);
    if (pending[i]!.push(c) >= 2_000) flush(i);
  }
  pending.forEach((_, i) => flush(i));
  for (const s of subjects) await s.commit();
}

/** `profiles` with another initial size, value lengths divided by `values` and op counts by `ops`. */
export function scaled(
  profiles: readonly StoreProfile[],
  o: { initialSize?: number; values?: number; ops?: number },
): StoreProfile[] {
  const [values, ops] = [o.values ?? 1, o.ops ?? 1];
  return profiles.map((p) => ({
    ...p,
    initialSize: o.initialSize ?? p.initialSize,
    valueMean: p.valueMean / values,
    valueStdDev: p.valueStdDev / values,
    changesPerVersion: Math.max(1, Math.round(p.changesPerVersion / ops)),
    growthPerVersion: (p.growthPerVersion ?? 0) / ops,
  }));
}

/** `w` past its initial load and `n` more versions, generated only: to continue from a stored copy. */
export function skip(w: Workload, n: number): Workload {
  for (const c of w.initial()) void c;
  for (let v = 0; v < n; v++) w.nextVersion();
  return w;
}

/** Per version: its changes, and each subject's time (put + commit), ns. */
export interface Timings {
  ops: number[];
  ns: number[][];
}

/**
 * Replays `versions` versions of `w` (past its initial load) into the subjects, each subject timed apart and in
 * rotated order, so that noise hits all alike; `after` runs untimed after each version. The event loop turns between
 * versions, as in a node between blocks, so that background prunes go on.
 */
export async function replay(
  b: Bench,
  w: Workload,
  versions: number,
  subjects: readonly Subject[],
  after?: (groups: Change[][], v: number) => unknown,
): Promise<Timings> {
  const t: Timings = { ops: [], ns: subjects.map(() => []) };
  const t0 = performance.now();
  for (let v = 0; v < versions; v++) {
    const groups = w.storeNames.map((): Change[] => []);
    for (const c of w.nextVersion()) groups[w.storeNames.indexOf(c.store)]!.push(c);
    t.ops.push(sum(groups.map((g) => g.length)));
    for (let j = 0; j < subjects.length; j++) {
      const k = (v + j) % subjects.length;
      t.ns[k]!.push(await timeNsAsync(() => (groups.forEach((g, i) => subjects[k]!.put(i, g)), subjects[k]!.commit())));
    }
    await after?.(groups, v);
    await tick();
    const s = ((performance.now() - t0) / 1e3).toFixed(0);
    if ((v + 1) % Math.ceil(versions / 10) === 0) b.log(`  ${v + 1} of ${versions} versions, ${s} s`);
  }
  return t;
}

/** Changes per second of subject `s` over versions [from, to). */
export function rate(t: Timings, s: number, from = 0, to = t.ops.length): number {
  return sum(t.ops.slice(from, to)) / (sum(t.ns[s]!.slice(from, to)) / 1e9);
}

// ---- the sha256 floor and the GC share ------------------------------------------------------------------------------

type HashFn = (algorithm: string, data: crypto.BinaryLike, encoding?: string) => string | Buffer;
/** node:crypto's `hash`, which the tree hashes with, captured before any wrapping. */
export const rawHash = crypto.hash as unknown as HashFn;
const HIST = 1 << 16;
const preimage = new Uint8Array(HIST).map((_, i) => (i * 131 + 7) & 0xff);

/**
 * Counts the tree's sha256 calls by preimage length and output encoding, wrapping node:crypto `hash`
 * (syncBuiltinESMExports updates the named export the tree imported). `floorNs` then hashes exactly as many
 * preimages of exactly those lengths, in the same encoding, from one hot buffer: the hashing alone, without the tree.
 */
export class HashCounter {
  calls = 0;
  private readonly hists = new Map<string, Uint32Array>();
  private readonly big: Array<[number, string]> = [];

  install(): void {
    let lastEnc = "";
    let hist: Uint32Array = new Uint32Array(0);
    const counting: HashFn = (algorithm, data, enc = "hex") => {
      this.calls++;
      if (enc !== lastEnc) this.hists.set((lastEnc = enc), (hist = this.hists.get(enc) ?? new Uint32Array(HIST)));
      const n = typeof data === "string" ? Buffer.byteLength(data) : data.byteLength;
      if (n < HIST) hist[n]!++;
      else this.big.push([n, enc]);
      return rawHash(algorithm, data, enc);
    };
    (crypto as unknown as { hash: HashFn }).hash = counting;
    syncBuiltinESMExports();
  }

  uninstall(): void {
    (crypto as unknown as { hash: HashFn }).hash = rawHash;
    syncBuiltinESMExports();
  }

  /** Nanoseconds to hash the preimages counted since the last call, which resets the count. */
  floorNs(): number {
    let x = 0;
    const ns = timeNs(() => {
      for (const [enc, hist] of this.hists) {
        for (let len = 0; len < HIST; len++) {
          if (hist[len] === 0) continue;
          const data = preimage.subarray(0, len);
          for (let i = hist[len]!; i > 0; i--) x ^= rawHash("sha256", data, enc).length;
        }
      }
      for (const [len, enc] of this.big) x ^= rawHash("sha256", new Uint8Array(len), enc).length;
    });
    consume(x);
    this.hists.forEach((h) => h.fill(0));
    this.big.length = 0;
    this.calls = 0;
    return ns;
  }
}

/** Records 'gc' performance entries, to tell what share of some timed windows went to garbage collection. */
export class GcWatch {
  private readonly entries: Array<{ startTime: number; duration: number }> = [];
  private readonly obs = new PerformanceObserver((list) => this.entries.push(...list.getEntries()));

  constructor() {
    this.obs.observe({ entryTypes: ["gc"] });
  }

  /** GC time that started inside the windows ([start, end], performance.now() ms) over their total length. */
  async share(windows: ReadonlyArray<readonly [number, number]>): Promise<number> {
    await tick();
    this.entries.push(...this.obs.takeRecords());
    this.obs.disconnect();
    const inside = this.entries.filter((e) => windows.some(([a, b]) => e.startTime >= a && e.startTime <= b));
    return sum(inside.map((e) => e.duration)) / sum(windows.map(([a, b]) => b - a));
  }
}

// ---- child processes ------------------------------------------------------------------------------------------------

/** A bench/child.ts process in role `role`, exchanging structured-clone messages (Uint8Arrays included) over IPC. */
export class Child {
  private readonly proc: ChildProcess;
  private readonly inbox: unknown[] = [];
  private wake: (() => void) | undefined;
  private exited: Error | undefined;

  constructor(role: string, args: readonly string[]) {
    const file = fileURLToPath(new URL("./child.ts", import.meta.url));
    this.proc = fork(file, [role, ...args], {
      cwd: fileURLToPath(new URL("..", import.meta.url)),
      execArgv: ["--import", "tsx"],
      serialization: "advanced",
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    this.proc.on("message", (m) => (this.inbox.push(m), this.wake?.()));
    this.proc.on("exit", (code) => {
      this.exited = new Error(`bench: child ${role} exited with ${code}`);
      this.wake?.();
    });
  }

  get pid(): number {
    return this.proc.pid!;
  }

  send(message: unknown): void {
    this.proc.send(message as object);
  }

  /** Sends `message` (unless undefined) and resolves with the child's next message. */
  async ask<T>(message?: unknown): Promise<T> {
    if (message !== undefined) this.send(message);
    while (this.inbox.length === 0) {
      if (this.exited !== undefined) throw this.exited;
      await new Promise<void>((r) => (this.wake = r));
    }
    return this.inbox.shift() as T;
  }

  kill(): void {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill();
  }
}
