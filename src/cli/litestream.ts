/**
 * Litestream beside a store or multi-store folder, for `iavlite replicate` and `iavlite restore`: the folder's SQLite
 * files, each one's replica under one URL, the config that names them, and the binary that runs it.
 *
 * Every SQLite file is its own Litestream database: a multi-store's commit marker (`commits.sqlite`) and each
 * store's `stores/<name>/iavl.sqlite`, each replicated to `<URL>/<the same relative path>`.
 *
 * Litestream logs two lines per WAL segment it ships (hundreds for a few dozen small versions); replicate prints its
 * other lines as they come (start, new generations, snapshots, warnings, errors, shutdown) and counts the segments in
 * one line now and then instead ({@link LitestreamLog}).
 * @module
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, posix, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { InvalidArgumentError } from "commander";
import { multiStoreNames } from "../api/multi-folder.js";
import { IavlError } from "../base/errors.js";
import { MARKER_FILE } from "../sqlite/commit-marker.js";
import { STORE_FILE, storeFileIn } from "../sqlite/connection.js";
import { copyProblems } from "../sqlite/integrity.js";
import { UsageError } from "./format.js";

/** A failure of the litestream binary (it could not start, or exited with an error): exit status 1, code `LITESTREAM`. */
export class LitestreamError extends Error {
  override readonly name = "LitestreamError";
  readonly code = "LITESTREAM";
}

/** The file of a store in a multi-store folder, relative to the folder. */
function storeFileOf(name: string): string {
  return `stores/${name}/${STORE_FILE}`;
}

/** The SQLite files of store or multi-store folder `dir`, relative to it: a multi-store's marker first, then its stores. */
export function sqliteFiles(dir: string): string[] {
  const names = multiStoreNames(dir);
  if (names === undefined) {
    storeFileIn(dir);
    return [STORE_FILE];
  }
  return [MARKER_FILE, ...names.map(storeFileOf)];
}

/** Where one file's replica is: a folder on this machine (`file://…` or a plain path), or a URL Litestream reads. */
type Replica = { path: string } | { url: string };

/** True for `file://…` and plain paths: replicas this machine can list. */
function isLocal(to: string): boolean {
  return to.startsWith("file://") || !/^\w+:\/\//.test(to);
}

/** The folder a local replica URL names. */
function localRoot(to: string): string {
  return to.startsWith("file://") ? fileURLToPath(to) : resolve(to);
}

/** The URL of the file `rel`'s replica under `to`, a URL that is not local (`s3://bucket/path`). */
function remoteUrl(to: string, rel: string): string {
  const u = new URL(to);
  u.pathname = posix.join(u.pathname === "" ? "/" : u.pathname, rel);
  return u.href;
}

/** The replica of the file `rel` (relative to the folder) under replica URL `to`. */
function replicaOf(to: string, rel: string): Replica {
  return isLocal(to) ? { path: join(localRoot(to), rel) } : { url: remoteUrl(to, rel) };
}

/** A Go duration, as Litestream reads `sync-interval`: `100ms`, `1s`, `1m30s`. */
const DURATION = /^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$/;

/** Parser of `--sync-interval`. */
export function durationArg(value: string): string {
  if (!DURATION.test(value)) throw new InvalidArgumentError(`must be a duration such as 100ms, 1s or 1m, got "${value}"`);
  return value;
}

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1e3, m: 60e3, h: 3600e3 };

/** Parser of `--progress`: a duration as `--sync-interval` takes it, or 0; in ms. */
export function progressArg(value: string): number {
  if (value === "0") return 0;
  durationArg(value);
  let ms = 0;
  for (const m of value.matchAll(/([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)/g)) ms += Number(m[1]) * UNIT_MS[m[2]!]!;
  return ms;
}

/**
 * The Litestream config (YAML) replicating the files `rels` of folder `dir` to `to`. With `syncInterval`, Litestream
 * looks at each WAL that often (`monitor-interval`) and ships what it found that often (`sync-interval`); its default
 * is 1s for both.
 */
export function litestreamConfig(dir: string, rels: readonly string[], to: string, syncInterval?: string): string {
  const abs = resolve(dir);
  // JSON strings are YAML's double-quoted scalars.
  const q = (s: string): string => JSON.stringify(s);
  const lines = [`# Litestream config written by iavlite for ${abs}: one database per SQLite file, replicated under ${to}`, "dbs:"];
  for (const rel of rels) {
    lines.push(`  - path: ${q(join(abs, rel))}`);
    if (syncInterval !== undefined) lines.push(`    monitor-interval: ${syncInterval}`);
    lines.push("    replicas:");
    const r = replicaOf(to, rel);
    lines.push("path" in r ? `      - path: ${q(r.path)}` : `      - url: ${q(r.url)}`);
    if (syncInterval !== undefined) lines.push(`        sync-interval: ${syncInterval}`);
  }
  return lines.join("\n") + "\n";
}

/**
 * The files a replica at `from` holds, relative to the folder they were replicated from. A local replica is listed;
 * one at a URL this machine cannot list (`s3://…`) is a multi-store when `stores` names its stores, else a plain
 * store, unless it holds a commit marker, when the stores must be named.
 */
async function replicaFiles(from: string, stores: readonly string[]): Promise<string[]> {
  if (!isLocal(from)) {
    if (stores.length > 0) return [MARKER_FILE, ...[...stores].sort().map(storeFileOf)];
    // Asked by URL: through a config, `litestream generations` wants the database file, which is not there yet.
    const generations = await runLitestream(["generations", remoteUrl(from, MARKER_FILE)]);
    if (generations.trim().split("\n").length > 1) {
      throw new UsageError(`${from} holds a multi-store folder: name its stores with --store (repeatable); a replica at a URL is not listed here`);
    }
    return [STORE_FILE];
  }
  const root = localRoot(from);
  const under = join(root, "stores");
  if (existsSync(under) || existsSync(join(root, MARKER_FILE))) {
    const found = existsSync(under)
      ? readdirSync(under, { withFileTypes: true })
          .filter((e) => e.isDirectory() && existsSync(join(under, e.name, STORE_FILE)))
          .map((e) => e.name)
          .sort()
      : [];
    if (found.length === 0) throw new LitestreamError(`${from} holds a commit marker's replica but no store's (no ${join(under, "<name>", STORE_FILE)})`);
    const odd = stores.filter((s) => !found.includes(s));
    if (odd.length > 0 || (stores.length > 0 && stores.length !== found.length)) {
      throw new UsageError(`${from} holds the stores ${found.join(", ")}, restored together (drop --store)`);
    }
    return [MARKER_FILE, ...found.map(storeFileOf)];
  }
  if (!existsSync(join(root, STORE_FILE))) throw new LitestreamError(`${from} holds no replica of an iavlite store (no ${join(root, STORE_FILE)})`);
  return [STORE_FILE];
}

/**
 * The litestream binary: `IAVLITE_LITESTREAM` when set, else the one the optional dependency
 * `@flydotio/litestream-linux-x64` installs (on linux x64), else `litestream` from the PATH.
 */
export function litestreamBinary(): string {
  const set = process.env["IAVLITE_LITESTREAM"];
  if (set !== undefined && set !== "") return set;
  if (process.platform === "linux" && process.arch === "x64") {
    try {
      const bundled = fileURLToPath(import.meta.resolve("@flydotio/litestream-linux-x64/litestream"));
      if (existsSync(bundled)) return bundled;
    } catch {
      // Not installed (an optional dependency): the PATH's.
    }
  }
  return "litestream";
}

function cannotStart(bin: string, e: Error): LitestreamError {
  return new LitestreamError(`cannot run ${bin}: ${e.message} (on linux x64 install the optional dependency @flydotio/litestream-linux-x64; elsewhere put litestream on the PATH, or set IAVLITE_LITESTREAM to a litestream binary)`);
}

/** Runs litestream with `args` to its end, its output kept; throws {@link LitestreamError} with that output when it fails. */
export function runLitestream(args: readonly string[]): Promise<string> {
  const bin = litestreamBinary();
  return new Promise((done, fail) => {
    const p = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    p.stdout.on("data", (d: Buffer) => (output += d.toString()));
    p.stderr.on("data", (d: Buffer) => (output += d.toString()));
    p.on("error", (e) => fail(cannotStart(bin, e)));
    p.on("close", (code, signal) => {
      if (code === 0) done(output);
      else fail(new LitestreamError(`litestream ${args[0] ?? ""} failed (${signal ?? `exit status ${code}`}): ${output.trim()}`));
    });
  });
}

/** Litestream's lines about each snapshot or WAL segment it writes (v0.3's replica.go): counted, not printed. */
const ROUTINE = new Set(["write snapshot", "write wal segment", "wal segment written"]);

/** How `iavlite replicate` prints what Litestream logs. */
export interface LogOptions {
  /** Every line as Litestream wrote it, one per WAL segment among them. */
  verbose: boolean;
  /** How often a line counts the WAL segments shipped meanwhile (when there were any), ms; 0 for only at the end. */
  progressMs: number;
}

/** Where a line goes: the stream it came on. */
type Stream = "stdout" | "stderr";

/** A field of a line of Litestream's log (Go's slog text: `key=value`, the value quoted when it must be). */
function field(line: string, key: string): string | undefined {
  const m = line.match(new RegExp(`(?:^| )${key}=("(?:[^"\\\\]|\\\\.)*"|\\S*)`));
  if (m === null) return undefined;
  const v = m[1]!;
  if (!v.startsWith('"')) return v;
  try {
    return JSON.parse(v) as string;
  } catch {
    // One of Go's escapes JSON lacks (\x..): the text between the quotes serves.
    return v.slice(1, -1);
  }
}

/** Segments remembered per database and replica to count a rewritten one once (a race spans a sync or two). */
const RECENT_SEGMENTS = 16;

/**
 * Litestream's log as replicate prints it: every line but the routine ones ({@link ROUTINE}: two for each WAL segment
 * shipped, one for each snapshot begun), which are counted instead, in a line of Litestream's own form every
 * `progressMs` that shipped any (`msg="wal segments written" segments=… sz=… dbs=…`) and one at the end. Verbose,
 * every line as it came.
 */
class LitestreamLog {
  private segments = 0;
  private bytes = 0;
  private readonly dbs = new Set<string>();
  /**
   * The positions of the last segments written per database and replica, so that one written twice counts once:
   * another segment may come between the two writes.
   */
  private readonly recentAt = new Map<string, string[]>();
  private since = new Date();
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly o: LogOptions,
    private readonly write: (to: Stream, line: string) => void,
  ) {
    if (!o.verbose && o.progressMs > 0) this.timer = setInterval(() => this.progress(), o.progressMs);
  }

  /** One line Litestream wrote on `from`. */
  line(from: Stream, text: string): void {
    const msg = this.o.verbose || field(text, "level") !== "INFO" ? undefined : field(text, "msg");
    if (msg === undefined || !ROUTINE.has(msg)) {
      this.write(from, text);
      return;
    }
    if (msg !== "wal segment written") return;
    // Litestream's last sync as it stops can race its monitor's and write the same segment twice, over itself.
    const db = field(text, "db") ?? "";
    const where = `${db} ${field(text, "replica") ?? ""}`;
    const at = field(text, "position") ?? "";
    const recent = this.recentAt.get(where) ?? [];
    if (recent.includes(at)) return;
    recent.push(at);
    if (recent.length > RECENT_SEGMENTS) recent.shift();
    this.recentAt.set(where, recent);
    this.segments++;
    this.bytes += Number(field(text, "sz") ?? 0) || 0;
    this.dbs.add(db);
  }

  /** Litestream ended: the count of what it shipped since the last line. */
  end(): void {
    clearInterval(this.timer);
    this.progress();
  }

  private progress(): void {
    if (this.segments === 0) return;
    const now = new Date();
    this.write(
      "stdout",
      `time=${now.toISOString()} level=INFO msg="wal segments written" segments=${this.segments} sz=${this.bytes} dbs=${this.dbs.size} since=${this.since.toISOString()}`,
    );
    this.segments = 0;
    this.bytes = 0;
    this.dbs.clear();
    this.since = now;
  }
}

/** Calls `each` with every line `stream` carries (the last one too, ended by a newline or not). */
function eachLine(stream: NodeJS.ReadableStream, each: (line: string) => void): void {
  let rest = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    const lines = (rest + chunk).split("\n");
    rest = lines.pop()!;
    for (const l of lines) each(l);
  });
  stream.on("end", () => {
    if (rest !== "") each(rest);
    rest = "";
  });
}

/**
 * Runs litestream with `args` in the foreground, its log printed as {@link LitestreamLog} prints it; SIGINT and
 * SIGTERM go on to it (it ships what it holds and stops). Resolves to its exit status once it ended.
 */
export function runLitestreamForeground(args: readonly string[], log: LogOptions): Promise<number> {
  const bin = litestreamBinary();
  return new Promise((done, fail) => {
    const p = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
    const out = new LitestreamLog(log, (to, line) => void process[to].write(line + "\n"));
    eachLine(p.stdout, (l) => out.line("stdout", l));
    eachLine(p.stderr, (l) => out.line("stderr", l));
    const signals = ["SIGINT", "SIGTERM"] as const;
    const forward = (s: NodeJS.Signals): void => void p.kill(s);
    for (const s of signals) process.on(s, forward);
    const end = (): void => {
      for (const s of signals) process.off(s, forward);
      out.end();
    };
    p.on("error", (e) => (end(), fail(cannotStart(bin, e))));
    // After both pipes ended: every line was seen.
    p.on("close", (code) => (end(), done(code ?? 1)));
  });
}

/** What {@link restoreReplicas} restored. */
export interface RestoredFiles {
  /** The files, relative to the folder: a multi-store's marker first. */
  files: string[];
  /** True for a multi-store folder. */
  multi: boolean;
  /** True when a multi-store's marker had no replica (at the time asked for): the stores alone were restored. */
  markerMissing: boolean;
  /** How long `litestream restore` took (every file side by side; the checks after it not counted), in seconds. */
  seconds: number;
}

/**
 * Restores every file the replica at `from` holds into the new folder `dir` (missing or empty) with `litestream
 * restore`, side by side; with `timestamp` (an RFC 3339 time) each as it was then. Throws {@link LitestreamError} when
 * one fails, `CORRUPT` when one comes back not whole ({@link checkWhole}); `dir` is left as it was then
 * ({@link unrestore}).
 */
export async function restoreReplicas(from: string, dir: string, stores: readonly string[], timestamp?: string): Promise<RestoredFiles> {
  const files = await replicaFiles(from, stores);
  const abs = resolve(dir);
  const existed = existsSync(abs);
  const temp = mkdtempSync(join(tmpdir(), "iavlite-restore-"));
  try {
    // Through a config, not replica URLs on the command line: litestream re-escapes a file:// URL's path.
    const config = join(temp, "litestream.yml");
    writeFileSync(config, litestreamConfig(abs, files, from));
    const t0 = performance.now();
    // Every restore ends before anything is removed: one that failed must not race the others' writes.
    const ends = await Promise.allSettled(
      files.map((rel) => {
        mkdirSync(dirname(join(abs, rel)), { recursive: true });
        // A marker without a replica is rebuilt from the stores (as a lost one is).
        return restoreFile(from, config, join(abs, rel), rel, timestamp, rel === MARKER_FILE);
      }),
    );
    const seconds = (performance.now() - t0) / 1e3;
    try {
      for (const e of ends) if (e.status === "rejected") throw e.reason;
      for (const e of ends) if (e.status === "fulfilled" && e.value !== undefined) checkWhole(e.value, from);
    } catch (e) {
      // Nothing half restored is left to be opened by mistake.
      unrestore(abs, existed);
      throw e;
    }
    // Litestream leaves its temporary database's WAL and shared-memory files beside each file it restored.
    for (const rel of files) for (const end of [".tmp", ".tmp-wal", ".tmp-shm"]) rmSync(join(abs, rel) + end, { force: true });
    const multi = files[0] === MARKER_FILE;
    return { files, multi, markerMissing: multi && !existsSync(join(abs, MARKER_FILE)), seconds };
  } finally {
    rmSync(temp, { recursive: true, force: true });
  }
}

/** Empties the folder `dir` a restore wrote into again: removed, or emptied when it `existed` (empty) before. */
export function unrestore(dir: string, existed: boolean): void {
  if (existed) for (const f of readdirSync(dir)) rmSync(join(dir, f), { recursive: true, force: true });
  else rmSync(dir, { recursive: true, force: true });
}

/** A file `litestream restore` wrote. */
interface RestoredFile {
  /** Where, and which file of the folder it is. */
  out: string;
  rel: string;
  /** The time it was restored as of (undefined: as last shipped). */
  timestamp: string | undefined;
  /** What Litestream printed while restoring it. */
  said: string;
}

/**
 * Restores the file `rel` to `out` (a database of `config`). Litestream restores a time only within a generation's
 * span, from its snapshot to the last change it shipped; a local replica whose last change came before `timestamp` is
 * restored whole instead, since it held nothing newer then. Undefined when an `optional` file has no replica (at that
 * time).
 */
async function restoreFile(from: string, config: string, out: string, rel: string, timestamp: string | undefined, optional: boolean): Promise<RestoredFile | undefined> {
  const run = (at: string | undefined): Promise<string> =>
    runLitestream(["restore", "-config", config, "-if-replica-exists", ...(at === undefined ? [] : ["-timestamp", at]), out]);
  const said = await run(timestamp);
  if (existsSync(out)) return { out, rel, timestamp, said };
  if (timestamp !== undefined && isLocal(from) && Date.parse(timestamp) >= lastShipped(join(localRoot(from), rel))) {
    const whole = await run(undefined);
    if (existsSync(out)) return { out, rel, timestamp: undefined, said: whole };
  }
  if (optional) return undefined;
  const when = timestamp === undefined ? "" : ` as of ${timestamp} (a time from its first snapshot to its last change shipped; leave --timestamp out for the newest state)`;
  throw new LitestreamError(`no backup of ${rel} under ${from}${when}`);
}

/**
 * Throws `CORRUPT` unless the file Litestream restored (from the replica at `from`) is whole.
 *
 * Litestream 0.3's snapshot is a copy of the database file, which SQLite keeps whole only together with its WAL:
 * a checkpoint that readers hold back skips every page changed again after the frames it may copy, so the file
 * mixes pages of two states until the rest is checkpointed. Restored with all of the WAL after it, the snapshot
 * comes back whole; restored as of a time between the snapshot and the WAL shipped after it, Litestream returns the
 * snapshot alone (or with too little of that WAL), torn (test/replicate.test.ts). SQLite's structure check finds that,
 * or a replica that lost part of its WAL, before anything reads the file.
 */
function checkWhole({ out, rel, timestamp, said }: RestoredFile, from: string): void {
  const problems = copyProblems(out, rel === MARKER_FILE ? "marker" : "store");
  if (problems.length === 0) return;
  const found = `SQLite finds: ${problems.slice(0, 3).join("; ")}${problems.length > 3 ? "; …" : ""}`;
  const what = `${rel} as litestream restored it from ${from}${timestamp === undefined ? "" : ` as of ${timestamp}`} is not whole (${found})`;
  let why: string;
  if (said.includes("snapshot only")) {
    why = `${timestamp === undefined ? "the replica holds" : "at that time the replica held"} only Litestream's snapshot of it, a copy of the file that is whole only with the WAL shipped after it`;
    why += timestamp === undefined ? "; restore again once Litestream shipped that WAL" : "; restore as of a later time";
  } else if (timestamp === undefined) {
    why = "the replica lacks part of the WAL its snapshot needs (not shipped yet, or lost) or is damaged; restore again later, or as of an earlier --timestamp";
  } else {
    why = "Litestream's snapshot of it is whole only with the WAL it held when it took it, and the WAL shipped by then did not reach that far (or the replica is damaged); restore as of a later time";
  }
  throw new IavlError("CORRUPT", `${what}: ${why}; nothing was restored`);
}

/** When a local replica last shipped anything (ms since the epoch; 0 when it holds nothing), from its files' times. */
function lastShipped(replica: string): number {
  const gens = join(replica, "generations");
  let last = 0;
  if (!existsSync(gens)) return last;
  for (const g of readdirSync(gens)) {
    for (const kind of ["snapshots", "wal"]) {
      const d = join(gens, g, kind);
      if (!existsSync(d)) continue;
      for (const f of readdirSync(d)) if (!f.endsWith(".tmp")) last = Math.max(last, statSync(join(d, f)).mtimeMs);
    }
  }
  return last;
}
