/**
 * The bench harness. Every figure is a ratio to a floor measured in the same run (SPEC §7), never a bare time, so a
 * noisy shared machine moves both sides alike. Sections only describe their workload; this module owns the rest:
 * timing, scratch folders, the plain SQLite floors (each layout measured, the faster one used), replaying a workload
 * into several subjects version by version, the sha256 floor, the GC share, child processes, and the report.
 * @module
 */
import crypto from "node:crypto";
import { fork, type ChildProcess } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import os from "node:os";
import { join } from "node:path";
import { PerformanceObserver, type PerformanceEntry } from "node:perf_hooks";
import { setImmediate as tick } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { Tree, type OpenOptions } from "../src/index.js";
import type { Change, Workload } from "./workload.js";

export const OUT = fileURLToPath(new URL("./out/", import.meta.url));
const REPO = fileURLToPath(new URL("..", import.meta.url));

// ---- timing ---------------------------------------------------------------------------------------------------------

/** Nanoseconds `fn` took (awaited when it returns a promise). */
export function timeNs(fn: () => unknown): number {
  const t0 = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t0);
}

/** `fn`'s result and the nanoseconds it took. */
export function timed<T>(fn: () => T): { ns: number; result: T } {
  const t0 = process.hrtime.bigint();
  const result = fn();
  return { ns: Number(process.hrtime.bigint() - t0), result };
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
  return s[lo]! + ((s[Math.ceil(at)] ?? s[lo]!) - s[lo]!) * (at - lo);
}

export const median = (xs: readonly number[]): number => percentile(xs, 0.5);
export const sum = (xs: readonly number[]): number => xs.reduce((a, x) => a + x, 0);
/** A full GC between phases when node runs with --expose-gc. */
export const gc = (): void => globalThis.gc?.();
export const mib = (bytes: number): number => bytes / 2 ** 20;
export { tick };

/** Keeps a result alive so that the optimiser cannot drop the work that made it. */
export let sink: unknown;
export function consume(x: unknown): void {
  sink = x;
}

// ---- the report -----------------------------------------------------------------------------------------------------

/** One figure. `ratio` is the cost relative to the floor: 1 = as fast as the floor, above 1 = slower. */
export interface Row {
  section: string;
  name: string;
  value: number;
  unit: string;
  floor: string;
  floorValue: number;
  ratio: number;
  /** Highest acceptable ratio: above it the row is a MISS and the run exits 1. */
  target?: number;
  /** A stricter target a later issue sets, printed but not yet enforced. */
  later?: number;
  pass?: boolean;
  note?: string;
}

export interface RowInput extends Omit<Row, "section" | "ratio" | "pass"> {
  /** Default: true for rates (unit ending in "/s"), whose ratio is then floor / value. */
  higherIsBetter?: boolean;
  /** Appended to the note (the plain floors name both layouts here). */
  floorNote?: string;
}

/** Collects the rows of a run; prints them as a table and writes bench/out/results.json and results.md. */
export class Bench {
  readonly rows: Row[] = [];
  readonly notes: string[] = [];
  readonly info = {
    date: new Date().toISOString(),
    node: process.version,
    cpu: `${os.cpus()[0]?.model.trim() ?? "?"} × ${os.cpus().length}`,
    memGiB: Math.round(os.totalmem() / 2 ** 30),
    gcExposed: typeof globalThis.gc === "function",
    argv: process.argv.slice(2),
  };
  section = "";
  private readonly dirs: Array<{ dir: string; untilExit: boolean }> = [];

  constructor(readonly quick: boolean) {}

  /** `quick` on a quick run, `full` otherwise. */
  q<T>(quick: T, full: T): T {
    return this.quick ? quick : full;
  }

  /** Progress, on stderr: stdout holds only the report. */
  log(text: string): void {
    process.stderr.write(`[${this.section}] ${text}\n`);
  }

  note(text: string): void {
    this.notes.push(`${this.section}: ${text}`);
  }

  row(input: RowInput): Row {
    const { higherIsBetter, floorNote, ...r } = input;
    const ratio = higherIsBetter ?? r.unit.endsWith("/s") ? r.floorValue / r.value : r.value / r.floorValue;
    const note = [r.note, floorNote].filter((x) => x !== undefined).join("; ");
    const row: Row = { section: this.section, ...r, ratio, ...(note === "" ? {} : { note }) };
    if (r.target !== undefined) row.pass = ratio <= r.target;
    this.rows.push(row);
    this.log(`${r.name}: ${fmt(r.value)} ${r.unit} vs ${fmt(r.floorValue)} → ${ratio.toFixed(2)}×`);
    return row;
  }

  /** A fresh folder bench/out/tmp-<name>-XXXX, deleted after the section (or `untilExit`, at the end of the run). */
  dir(name: string, untilExit = false): string {
    mkdirSync(OUT, { recursive: true });
    const dir = mkdtempSync(join(OUT, `tmp-${name}-`));
    this.dirs.push({ dir, untilExit });
    return dir;
  }

  cleanup(all = false): void {
    for (const d of this.dirs.filter((d) => all || !d.untilExit)) rmSync(d.dir, { recursive: true, force: true });
  }

  table(): string {
    const cells = this.rows.map((r) => [r.section, r.name, `${fmt(r.value)} ${r.unit}`, r.floor, fmt(r.floorValue), `${r.ratio.toFixed(2)}×`, targetText(r), r.pass === undefined ? "" : r.pass ? "PASS" : "MISS"]);
    const all = [["section", "measure", "value", "floor", "floor value", "ratio", "target", ""], ...cells];
    const w = all[0]!.map((_, c) => Math.max(...all.map((row) => row[c]!.length)));
    const line = (row: string[]): string => row.map((x, c) => ([2, 4, 5].includes(c) ? x.padStart(w[c]!) : x.padEnd(w[c]!))).join("  ").trimEnd();
    const i = this.info;
    return [
      `iavlite bench ${i.date} · node ${i.node} · ${i.cpu} · ${i.memGiB} GiB · gc ${i.gcExposed ? "exposed" : "not exposed"} · args: ${i.argv.join(" ") || "(none)"}`,
      "ratio = cost relative to a floor measured in this run (1.00 = the floor; lower is better); a throughput target ≥ X× is the cost target ≤ 1/X×",
      "",
      line(all[0]!),
      w.map((n) => "-".repeat(n)).join("  "),
      ...cells.map(line),
      "",
      ...this.rows.filter((r) => r.note !== undefined).map((r) => `* ${r.section} / ${r.name}: ${r.note}`),
      ...this.notes.map((n) => `* ${n}`),
    ].join("\n");
  }

  markdown(): string {
    const esc = (s: string): string => s.replace(/\|/g, "\\|");
    return [
      `Measured ${this.info.date.slice(0, 10)} on ${this.info.cpu}, node ${this.info.node}. Ratio = cost relative to the floor measured in the same run.`,
      "",
      "| section | measure | value | floor | ratio | target |",
      "|---|---|---:|---|---:|---|",
      ...this.rows.map((r) => `| ${r.section} | ${esc(r.name)} | ${fmt(r.value)} ${r.unit} | ${esc(r.floor)}: ${fmt(r.floorValue)} | ${r.ratio.toFixed(2)}× | ${targetText(r)}${r.pass === undefined ? "" : r.pass ? " ✅" : " ❌"} |`),
    ].join("\n");
  }

  write(): void {
    mkdirSync(OUT, { recursive: true });
    writeFileSync(join(OUT, "results.json"), `${JSON.stringify({ info: this.info, rows: this.rows, notes: this.notes }, null, 2)}\n`);
    writeFileSync(join(OUT, "results.md"), `${this.markdown()}\n`);
  }
}

function targetText(r: Row): string {
  if (r.target === undefined) return "";
  const t = (x: number): string => `≤ ${x.toFixed(2)}×${r.unit.endsWith("/s") ? ` (≥ ${(1 / x).toFixed(2)}×)` : ""}`;
  return r.later === undefined ? t(r.target) : `${t(r.target)}, later ${t(r.later)}`;
}

/** Three significant figures, thousands separated. */
export function fmt(x: number): string {
  const a = Math.abs(x);
  if (!Number.isFinite(x)) return String(x);
  if (a >= 1000 || Number.isInteger(x)) return Math.round(x).toLocaleString("en-US");
  return a >= 100 ? x.toFixed(0) : a >= 10 ? x.toFixed(1) : a >= 1 ? x.toFixed(2) : x.toPrecision(3);
}

// ---- files ----------------------------------------------------------------------------------------------------------

/** Bytes of the files under `path` (or of the file itself); 0 when missing. */
export function bytesOf(path: string): number {
  if (!existsSync(path)) return 0;
  if (!statSync(path).isDirectory()) return statSync(path).size;
  return sum(readdirSync(path).map((f) => bytesOf(join(path, f))));
}

/** Copies a closed store folder (or a folder of them). */
export function copyDir(from: string, to: string): void {
  cpSync(from, to, { recursive: true });
}

// ---- the plain SQLite floors ----------------------------------------------------------------------------------------

/** The two ways to build a plain key-value table; floors measure both and compare with the faster. */
export type Layout = "rowid" | "without rowid";
export const LAYOUTS: readonly Layout[] = ["rowid", "without rowid"];
export const layoutSql = (l: Layout): string => (l === "rowid" ? "" : " WITHOUT ROWID");
/** One value per layout. */
export const perLayout = <T>(f: (l: Layout, i: number) => T): Record<Layout, T> => ({ rowid: f("rowid", 0), "without rowid": f("without rowid", 1) });

/** A plain SQLite file with the store's settings (src/sqlite/connection.ts): WAL, synchronous NORMAL, 32 MiB cache. */
export function plainDb(file: string, readonly = false): Database.Database {
  const db = new Database(file, { readonly });
  if (!readonly) db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("cache_size = -32768");
  db.pragma("temp_store = MEMORY");
  return db;
}

/** `kv (key BLOB PRIMARY KEY, value BLOB)`, upserts and deletes, one transaction per {@link apply}. */
export class PlainKv {
  readonly db: Database.Database;
  private readonly getStmt: Database.Statement;
  readonly apply: (changes: readonly Change[]) => void;

  constructor(file: string, readonly layout: Layout) {
    this.db = plainDb(file);
    this.db.exec(`CREATE TABLE IF NOT EXISTS kv (key BLOB PRIMARY KEY, value BLOB)${layoutSql(layout)}`);
    const put = this.db.prepare("INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value");
    const del = this.db.prepare("DELETE FROM kv WHERE key = ?");
    this.getStmt = this.db.prepare("SELECT value FROM kv WHERE key = ?").pluck();
    const tx = this.db.transaction((changes: readonly Change[]) => {
      for (const c of changes) {
        if (!c.delete) put.run(c.key, c.value);
        else if (del.run(c.key).changes !== 1) throw new Error("bench: plain delete of a live key found nothing");
      }
    });
    this.apply = (changes) => tx.immediate(changes);
  }

  get(key: Uint8Array): Uint8Array | undefined {
    return this.getStmt.get(key) as Uint8Array | undefined;
  }
}

/** `kv (key, version, value)` keyed by (key, version): a key's value at every version (NULL once deleted). */
export class PlainVersions {
  readonly db: Database.Database;
  private readonly getStmt: Database.Statement;
  readonly put: (changes: readonly Change[], version: number) => void;

  constructor(file: string, layout: Layout) {
    this.db = plainDb(file);
    this.db.exec(`CREATE TABLE IF NOT EXISTS kv (key BLOB NOT NULL, version INTEGER NOT NULL, value BLOB, PRIMARY KEY (key, version))${layoutSql(layout)}`);
    const ins = this.db.prepare("INSERT INTO kv (key, version, value) VALUES (?, ?, ?) ON CONFLICT (key, version) DO UPDATE SET value = excluded.value");
    this.getStmt = this.db.prepare("SELECT value FROM kv WHERE key = ? AND version <= ? ORDER BY version DESC LIMIT 1").pluck();
    const tx = this.db.transaction((changes: readonly Change[], version: number) => {
      for (const c of changes) ins.run(c.key, version, c.delete ? null : c.value);
    });
    this.put = (changes, version) => tx.immediate(changes, version);
  }

  get(key: Uint8Array, version: number): Uint8Array | undefined {
    return (this.getStmt.get(key, version) as Uint8Array | null | undefined) ?? undefined;
  }
}

/** Picks the faster of the layouts' figures as a row's floor and names both in its note. */
export function fasterPlain(figs: Readonly<Record<Layout, number>>, unit: string, what: string): Pick<RowInput, "floor" | "floorValue" | "floorNote"> {
  const higher = unit.endsWith("/s");
  const best = LAYOUTS.reduce((a, l) => ((higher ? figs[l] > figs[a] : figs[l] < figs[a]) ? l : a));
  return {
    floor: `plain SQLite kv (${best}), ${what}`,
    floorValue: figs[best],
    floorNote: `plain floors: ${LAYOUTS.map((l) => `${l} ${fmt(figs[l])} ${unit}`).join(", ")}`,
  };
}

// ---- subjects: what a workload is replayed into ---------------------------------------------------------------------

/** The trees under test or a floor, taking one version at a time: `put` each store's changes, then `commit`. */
export interface Subject {
  readonly name: string;
  put(store: number, changes: readonly Change[]): void;
  commit(): void | Promise<void>;
  close(): void;
}

/** Applies `changes` to a tree (a delete must find its key). */
export function applyToTree(tree: Tree, changes: readonly Change[]): void {
  for (const c of changes) {
    if (!c.delete) tree.set(c.key, c.value!);
    else if (!tree.remove(c.key)) throw new Error("bench: tree remove of a live key found nothing");
  }
}

/** One `Tree.open` store per name in `dir/<name>`, committed one after another. */
export function treeSubject(name: string, dir: string, stores: readonly string[], options?: OpenOptions): Subject & { trees: Tree[] } {
  const trees = stores.map((s) => Tree.open(join(dir, s), options));
  return {
    name,
    trees,
    put: (i, changes) => applyToTree(trees[i]!, changes),
    commit: () => trees.forEach((t) => t.commit()),
    close: () => trees.forEach((t) => t.close()),
  };
}

/** One plain kv table per store in `dir/plain-<store>-<layout>.sqlite`, one transaction per store and version. */
export function plainSubject(dir: string, stores: readonly string[], layout: Layout): Subject & { kvs: PlainKv[] } {
  mkdirSync(dir, { recursive: true });
  const kvs = stores.map((s) => new PlainKv(join(dir, `plain-${s}-${layout.replace(" ", "-")}.sqlite`), layout));
  return { name: `plain ${layout}`, kvs, put: (i, changes) => kvs[i]!.apply(changes), commit: () => undefined, close: () => kvs.forEach((k) => k.db.close()) };
}

/** Splits one version's changes by store, in `names` order. */
export function byStore(names: readonly string[], changes: readonly Change[]): Change[][] {
  const groups = names.map((): Change[] => []);
  for (const c of changes) groups[names.indexOf(c.store)]!.push(c);
  return groups;
}

/** Streams `w`'s initial load (version 1) into the subjects in batches, then commits each. */
export async function load(w: Workload, subjects: readonly Subject[]): Promise<void> {
  const names = w.storeNames;
  const pending = names.map((): Change[] => []);
  const flush = (i: number): void => {
    for (const s of subjects) s.put(i, pending[i]!);
    pending[i] = [];
  };
  for (const c of w.initial()) {
    const i = names.indexOf(c.store);
    if (pending[i]!.push(c) >= 2_000) flush(i);
  }
  names.forEach((_, i) => flush(i));
  for (const s of subjects) await s.commit();
}

/** Runs `n` versions of `w` through the generator alone (after its initial load), to catch up with stored state. */
export function skip(w: Workload, n: number): Workload {
  for (const c of w.initial()) void c;
  for (let v = 0; v < n; v++) w.nextVersion();
  return w;
}

/** Per version: its changes, and each subject's time (put + commit). */
export interface Timings {
  ops: number[];
  ns: number[][];
}

/**
 * Replays `versions` versions of `w` into the subjects, version by version, each subject timed apart and in rotated
 * order so that noise hits all alike; `after` runs untimed after each version. The event loop turns between
 * versions, as in a node between blocks, so that background prunes go on.
 */
export async function replay(
  w: Workload,
  versions: number,
  subjects: readonly Subject[],
  after?: (groups: Change[][], v: number) => void | Promise<void>,
  log?: (text: string) => void,
): Promise<Timings> {
  const t: Timings = { ops: [], ns: subjects.map(() => []) };
  const t0 = performance.now();
  for (let v = 0; v < versions; v++) {
    const groups = byStore(w.storeNames, w.nextVersion());
    t.ops.push(sum(groups.map((g) => g.length)));
    for (let j = 0; j < subjects.length; j++) {
      const k = (v + j) % subjects.length;
      const s = subjects[k]!;
      t.ns[k]!.push(await timeNsAsync(() => (groups.forEach((g, i) => s.put(i, g)), s.commit())));
    }
    await after?.(groups, v);
    await tick();
    if (log !== undefined && (v + 1) % Math.ceil(versions / 10) === 0) log(`  ${v + 1} of ${versions} versions, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  }
  return t;
}

/** Changes per second of subject `s` over versions [from, to). */
export function rate(t: Timings, s: number, from = 0, to = t.ops.length): number {
  return sum(t.ops.slice(from, to)) / (sum(t.ns[s]!.slice(from, to)) / 1e9);
}

// ---- the sha256 floor -----------------------------------------------------------------------------------------------

type HashFn = (algorithm: string, data: crypto.BinaryLike, encoding?: string) => string | Buffer;
/** node:crypto's `hash`, which the tree hashes with, captured before any wrapping. */
export const rawHash = crypto.hash as unknown as HashFn;
const HIST = 1 << 16;
const preimage = new Uint8Array(HIST).map((_, i) => (i * 131 + 7) & 0xff);

/**
 * Counts the tree's sha256 calls and their preimage lengths by wrapping node:crypto `hash` (the module's named
 * export is updated with syncBuiltinESMExports, so the tree's own import sees the wrapper). The floor then hashes
 * exactly as many preimages of exactly those lengths, with the same output encoding, from one hot buffer.
 */
export class HashCounter {
  calls = 0;
  private readonly hists = new Map<string, Uint32Array>();
  private readonly big: Array<[number, string]> = [];

  install(): void {
    let lastEnc = "";
    let hist: Uint32Array = new Uint32Array(0);
    const wrapped: HashFn = (algorithm, data, encoding = "hex") => {
      this.calls++;
      if (encoding !== lastEnc) {
        hist = this.hists.get(encoding) ?? new Uint32Array(HIST);
        this.hists.set((lastEnc = encoding), hist);
      }
      const n = typeof data === "string" ? Buffer.byteLength(data) : data.byteLength;
      if (n < HIST) hist[n]!++;
      else this.big.push([n, encoding]);
      return rawHash(algorithm, data, encoding);
    };
    (crypto as unknown as { hash: HashFn }).hash = wrapped;
    syncBuiltinESMExports();
  }

  uninstall(): void {
    (crypto as unknown as { hash: HashFn }).hash = rawHash;
    syncBuiltinESMExports();
  }

  /** Nanoseconds to hash the preimages counted since the last call, which resets the tally. */
  floorNs(): number {
    let x = 0;
    const ns = timeNs(() => {
      for (const [enc, hist] of this.hists) {
        for (let len = 0; len < HIST; len++) {
          const data = preimage.subarray(0, len);
          for (let i = hist[len]!; i > 0; i--) x ^= rawHash("sha256", data, enc).length;
        }
      }
      for (const [len, enc] of this.big) x ^= rawHash("sha256", new Uint8Array(len), enc).length;
    });
    consume(x);
    for (const h of this.hists.values()) h.fill(0);
    this.big.length = 0;
    this.calls = 0;
    return ns;
  }
}

// ---- garbage collection ---------------------------------------------------------------------------------------------

/** Records 'gc' performance entries, to tell what share of some timed windows went to garbage collection. */
export class GcWatch {
  private readonly entries: Array<[number, number]> = [];
  private readonly obs = new PerformanceObserver((list) => this.take(list.getEntries()));

  constructor() {
    this.obs.observe({ entryTypes: ["gc"] });
  }

  private take(es: readonly PerformanceEntry[]): void {
    for (const e of es) this.entries.push([e.startTime, e.duration]);
  }

  /** GC time that started inside the windows ([start, end] in performance.now() ms) over their total length. */
  async share(windows: ReadonlyArray<readonly [number, number]>): Promise<number> {
    await tick();
    this.take(this.obs.takeRecords());
    this.obs.disconnect();
    const inside = this.entries.filter(([s]) => windows.some(([a, b]) => s >= a && s <= b));
    return sum(inside.map(([, d]) => d)) / sum(windows.map(([a, b]) => b - a));
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
    this.proc = fork(file, [role, ...args], { cwd: REPO, execArgv: ["--import", "tsx"], serialization: "advanced", stdio: ["ignore", "inherit", "inherit", "ipc"] });
    this.proc.on("message", (m) => (this.inbox.push(m), this.wake?.()));
    this.proc.on("exit", (code) => ((this.exited = new Error(`bench: child ${role} exited with ${code}`)), this.wake?.()));
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  send(message: unknown): void {
    this.proc.send(message as object);
  }

  /** The child's next message. */
  async next<T>(): Promise<T> {
    while (this.inbox.length === 0) {
      if (this.exited !== undefined) throw this.exited;
      await new Promise<void>((r) => (this.wake = r));
    }
    return this.inbox.shift() as T;
  }

  async ask<T>(message: unknown): Promise<T> {
    this.send(message);
    return this.next<T>();
  }

  kill(): void {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill();
  }
}
