/**
 * `iavlite replicate` and `iavlite restore` with the real Litestream binary (@flydotio/litestream) and file://
 * replicas (an s3:// replica takes the same path through Litestream; no S3 server is at hand here). A writer child
 * commits a scaled mixed stream with walCheckpoints "external" while `iavlite replicate` ships every SQLite file of
 * its folder; the writer is SIGKILLed, Litestream stopped once it shipped the rest; restores then give the last
 * version committed, the replica's state at the kill (`--timestamp` of the kill), an earlier point (`--timestamp`),
 * and an older version (`--version`), each opening whole with the writer's hash for its version. A time between a
 * snapshot and the WAL it needs, which Litestream restores torn, is refused.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, statSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import Database from "better-sqlite3";
import { describe, expect, it, inject } from "vitest";
import { MultiTree, toHex, Tree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { nodeArgs } from "./processes.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const main = inject("cli");
const writerScript = fileURLToPath(new URL("./fixtures/replicated-writer.ts", import.meta.url));

/** A child process with its output kept, and a wait for a line that matches. */
class Child {
  readonly p: ChildProcess;
  /** Stdout and stderr together, as they came. */
  out = "";
  stdout = "";
  private readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private closed = false;
  private waiters: Array<() => void> = [];

  constructor(args: string[], onLine?: (line: string) => void) {
    this.p = spawn(process.execPath, nodeArgs(args), { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let buf = "";
    this.p.stdout!.on("data", (d: Buffer) => {
      this.out += d.toString();
      this.stdout += d.toString();
      buf += d.toString();
      for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
        onLine?.(buf.slice(0, i));
        buf = buf.slice(i + 1);
      }
      this.wake();
    });
    this.p.stderr!.on("data", (d: Buffer) => ((this.out += d.toString()), this.wake()));
    this.exited = new Promise((done) =>
      this.p.on("close", (code, signal) => {
        this.closed = true;
        done({ code, signal });
        this.wake();
      }),
    );
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /**
   * Resolves once `test` holds (checked after each output), failing if the child ends first; no deadline of its own
   * (Litestream and the writer are slow to start on a busy machine: the test's timeout is the limit).
   */
  async until(test: () => boolean, what: string): Promise<void> {
    while (!test()) {
      if (this.closed) throw new Error(`the child ended before ${what}; output:\n${this.out.slice(-3000)}`);
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }

  /** Resolves once the child ended. */
  ended(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return this.exited;
  }

  stop(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    this.p.kill(signal);
    return this.exited;
  }
}

/** The newest version a restore's folder held whole as restored: a plain store's, or the least of a multi-store's. */
function held(r: { json: Record<string, unknown> }): number {
  const stores = r.json["stores"] as Array<{ restored: number }> | undefined;
  if (stores === undefined) return r.json["restored"] as number;
  return Math.min((r.json["marker"] as number | null) ?? 0, ...stores.map((s) => s.restored));
}

/** Runs `iavlite args… --json`; its exit status and the value it printed. */
async function iavlite(args: string[]): Promise<{ code: number | null; json: Record<string, unknown>; out: string }> {
  const c = new Child([main, ...args, "--json"]);
  const { code } = await c.ended();
  return { code, json: c.stdout === "" ? {} : (JSON.parse(c.stdout) as Record<string, unknown>), out: c.out };
}

describe.each([{ kind: "plain" }, { kind: "multi" }])("Litestream replica of a $kind folder", ({ kind }) => {
  it("restores the last version committed, the state at the kill, an earlier time and an older version, each whole with the writer's hash", async () => {
    const base = tempDir("iavlite-litestream-");
    const dir = join(base, "data");
    const replica = pathToFileURL(join(base, "replica")).href;
    const pending = new Map<number, string>();
    const committedAt = new Map<number, number>();
    let last = 0;
    const writer = new Child([writerScript, dir, kind], (line) => {
      const p = /^pending (\d+) ([0-9a-f]+)$/.exec(line);
      if (p) pending.set(Number(p[1]), p[2]!);
      const c = /^committed (\d+) (\d+)$/.exec(line);
      if (c) committedAt.set((last = Number(c[1])), Number(c[2]));
    });
    let rep: Child | undefined;
    let replicating = 0;
    let beforeLitestream = 0;
    let killedAt = 0;
    let wholeFrom = 0;
    try {
      await writer.until(() => writer.out.includes("opened"), "the writer opened");
      beforeLitestream = last;
      rep = new Child([main, "replicate", dir, "--to", replica, "--sync-interval", "100ms"]);
      const files = kind === "multi" ? 4 : 1;
      await rep.until(() => (rep!.out.match(/snapshot written/g) ?? []).length >= files, "Litestream's first snapshots");
      replicating = Date.now();
      const first = last;
      // A snapshot is whole only with the WAL it held when it was taken (checkWhole in src/cli/litestream.ts): a time
      // before Litestream shipped that WAL, which takes seconds on a busy machine, is refused. Once a restore holds a
      // version begun after every snapshot, any later time restores whole.
      const begunAfterSnapshots = (): number | undefined => {
        for (const [v, t] of committedAt) if (t > replicating) return v + 1;
        return undefined;
      };
      for (let i = 0; wholeFrom === 0; i++) {
        await writer.until(() => last >= (begunAfterSnapshots() ?? Infinity), "a version begun after the snapshots");
        const need = begunAfterSnapshots()!;
        const r = await iavlite(["restore", replica, join(base, `whole-${i}`)]);
        if (r.code === 0 && held(r) >= need) wholeFrom = Date.now();
      }
      // Three seconds of commits replicated, at least 20 versions past the snapshots, and 10 after the first one
      // committed 1.5 s into the replication once the replica was whole (the earlier time restored below).
      const since = Math.max(replicating + 1_500, wholeFrom);
      await writer.until(
        () => Date.now() - replicating > 3_000 && last >= first + 20 && (committedAt.get(last - 10) ?? 0) > since,
        "three seconds, 20 versions and 10 after the replica was whole",
      );
    } finally {
      killedAt = Date.now();
      await writer.stop("SIGKILL");
    }
    const committed = last;
    // Litestream ships what the dead writer left within a few sync intervals: restores until one holds every version
    // commit() returned (as soon as the first, as a rule), then SIGTERM stops it after a last sync.
    for (let i = 0; ; i++) {
      const shipped = await iavlite(["restore", replica, join(base, `shipped-${i}`)]);
      if (shipped.code === 0 && (shipped.json["version"] as number) >= committed) break;
    }
    const stopped = await rep!.stop("SIGTERM");
    // Litestream never lost its place: one generation per file, no second one (iavlite did not checkpoint beside it).
    expect(rep!.out.match(/new generation/g)?.length, rep!.out.slice(-3000)).toBe(kind === "multi" ? 4 : 1);

    // The version committed 1.5 s into the replication, once the replica was whole.
    const versions = [...committedAt.keys()];
    const middle = versions.find((v) => committedAt.get(v)! > Math.max(replicating + 1_500, wholeFrom))!;
    const at = (t: number): string => new Date(t).toISOString();
    const [latest, atKill, earlier, older, never] = await Promise.all([
      iavlite(["restore", replica, join(base, "latest")]),
      iavlite(["restore", replica, join(base, "at-kill"), "--timestamp", at(killedAt)]),
      iavlite(["restore", replica, join(base, "earlier"), "--timestamp", at(committedAt.get(middle)!)]),
      iavlite(["restore", replica, join(base, "older"), "--version", String(middle - 5)]),
      iavlite(["restore", replica, join(base, "never"), "--version", String(committed + 1_000)]),
    ]);
    // A version no store holds is refused, not guessed at, and nothing restored is left to be opened by mistake.
    expect([never.code, (never.json["error"] as { code: string } | undefined)?.code]).toEqual([1, "VERSION_NOT_FOUND"]);
    expect(existsSync(join(base, "never"))).toBe(false);
    // Nor does a restore leave Litestream's temporary files beside what it restored.
    for (const r of [latest, atKill, earlier, older]) {
      const left = readdirSync(String(r.json["dir"]), { recursive: true, encoding: "utf8" }).filter((f) => f.includes(".tmp"));
      expect(left, String(r.json["dir"])).toEqual([]);
    }
    const hashOf = (r: { json: Record<string, unknown> }): string => String(kind === "multi" ? r.json["appHash"] : r.json["hash"]);
    for (const r of [latest, atKill, earlier, older]) {
      expect(r.code, r.out).toBe(0);
      expect(r.json["ok"]).toBe(true);
      const v = r.json["version"] as number;
      // A version the writer committed (or was committing: its hash was printed first), with the writer's hash.
      expect(pending.get(v), `version ${v}`).toBe(hashOf(r));
    }
    const v = (r: { json: Record<string, unknown> }): number => r.json["version"] as number;
    // Litestream stopped after shipping everything on disk: nothing that commit() returned is lost.
    expect(v(latest)).toBeGreaterThanOrEqual(committed);
    expect(v(atKill)).toBeLessThanOrEqual(v(latest));
    // Segments shipped by the time version `middle` committed hold no later version, and at least the first
    // snapshots' (how far Litestream's shipping lags behind depends on the machine's load: 1.5 s was not enough).
    expect(v(earlier)).toBeLessThanOrEqual(middle);
    expect(v(earlier)).toBeGreaterThanOrEqual(beforeLitestream);
    expect(v(older)).toBe(middle - 5);
    const behind = committed - v(atKill);
    const each = (r: { json: Record<string, unknown> }): string =>
      kind === "multi" ? ` (stores ${(r.json["stores"] as Array<{ restored: number }>).map((x) => x.restored).join("/")}, marker ${String(r.json["marker"])})` : "";
    console.log(
      `litestream ${kind}: ${committed} committed at the kill; the replica held ${v(atKill)}${each(atKill)} then (${behind} behind), ` +
        `${v(latest)} after its last sync (litestream exited ${String(stopped.code ?? stopped.signal)}); ` +
        `--timestamp of version ${middle} gave ${v(earlier)}${each(earlier)}; restores took ` +
        [latest, atKill, earlier, older].map((r) => `${String(r.json["seconds"])} s`).join(", "),
    );

    // The restored folder opens for writing (recovery finds nothing to refuse) at that version and hash.
    if (kind === "multi") {
      const m = MultiTree.open(join(base, "earlier"), { stores: ["bank", "lockup", "staking"] });
      expect([m.version, toHex(m.appHash)]).toEqual([v(earlier), pending.get(v(earlier))]);
      m.close();
    } else {
      const t = Tree.open(join(base, "earlier"));
      expect([t.version, toHex(t.hash)]).toEqual([v(earlier), pending.get(v(earlier))]);
      t.close();
    }
  }, 240_000);
});

/** The WAL segments Litestream shipped into the local replica folder `root`: one file each. */
function walSegments(root: string): number {
  return readdirSync(root, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".wal.lz4")).length;
}

/** The `msg` of each line of Litestream's log in `out`. */
function messages(out: string): string[] {
  return out
    .split("\n")
    .map((l) => /(?:^| )msg=("(?:[^"\\]|\\.)*"|\S+)/.exec(l)?.[1])
    .filter((m) => m !== undefined)
    .map((m) => (m.startsWith('"') ? (JSON.parse(m) as string) : m));
}

describe("what replicate prints", () => {
  it("Litestream's state lines as they come and a count of the WAL segments shipped, not two lines per segment; --verbose prints them all", async () => {
    const base = tempDir("iavlite-litestream-log-");
    const dir = join(base, "data");
    const writer = new Child([writerScript, dir, "plain"]);
    let quiet: Child | undefined;
    let verbose: Child | undefined;
    try {
      await writer.until(() => writer.out.includes("opened"), "the writer opened");
      quiet = new Child([main, "replicate", dir, "--to", join(base, "quiet"), "--sync-interval", "100ms", "--progress", "200ms"]);
      // Two counts: segments shipped in two intervals, of the versions the writer went on committing.
      await quiet.until(() => (quiet!.stdout.match(/msg="wal segments written"/g) ?? []).length >= 2, "two counts of WAL segments");
      // Its exit status is not checked: Litestream stopped beside a live writer may fail its last checkpoint
      // ("error closing db … context canceled", exit status 1), a line that is passed on as it came.
      await quiet.stop("SIGTERM");
      // One Litestream at a time on a database: the verbose one after the first stopped.
      verbose = new Child([main, "replicate", dir, "--to", join(base, "verbose"), "--sync-interval", "100ms", "--verbose"]);
      await verbose.until(() => (verbose!.stdout.match(/msg="wal segment written"/g) ?? []).length >= 3, "three WAL segments");
      await verbose.stop("SIGTERM");
    } finally {
      await writer.stop("SIGKILL");
      for (const c of [quiet, verbose]) if (c !== undefined && c.p.exitCode === null) await c.stop("SIGKILL");
    }
    const routine = ["write snapshot", "write wal segment", "wal segment written"];
    const said = messages(quiet.stdout);
    expect(said.filter((m) => routine.includes(m))).toEqual([]);
    // What the operator needs: what is replicated where, the new generation and its snapshot, the shutdown.
    for (const m of ["litestream", "initialized db", "replicating to", "sync: new generation", "snapshot written", "signal received, litestream shutting down", "litestream shut down"]) {
      expect(said, quiet.stdout).toContain(m);
    }
    // The counts (the last one printed as Litestream stopped) add up to the segments in the replica.
    const counts = [...quiet.stdout.matchAll(/msg="wal segments written" segments=(\d+) sz=(\d+) dbs=1 since=\S+$/gm)].map((m) => Number(m[1]));
    expect(counts.length).toBeGreaterThanOrEqual(2);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(walSegments(join(base, "quiet")));
    // Verbose: Litestream's every line, and no count.
    const all = messages(verbose.stdout);
    // A segment Litestream wrote twice at one position (its last sync racing its monitor's) is one file.
    const positions = new Set([...verbose.stdout.matchAll(/msg="wal segment written" .*?position=(\S+)/g)].map((m) => m[1]));
    expect(positions.size).toBe(walSegments(join(base, "verbose")));
    expect(all).toContain("write wal segment");
    expect(all).not.toContain("wal segments written");
  }, 180_000);
});

describe("replicate and restore on the command line", () => {
  it("writes a config naming every SQLite file of a multi-store folder, each replicated under the URL; refuses what it cannot restore into", async () => {
    const base = tempDir("iavlite-litestream-cli-");
    const dir = join(base, "data");
    const m = MultiTree.open(dir, { stores: ["bank", "staking"] });
    m.tree("bank").set(new Uint8Array([1]), new Uint8Array([2]));
    m.tree("staking").set(new Uint8Array([3]), new Uint8Array([4]));
    m.commit();
    m.close();
    const cfg = new Child([main, "replicate", dir, "--to", "s3://bucket.localhost:9000/chain", "--sync-interval", "250ms", "--config-only"]);
    expect((await cfg.ended()).code, cfg.out).toBe(0);
    for (const rel of ["commits.sqlite", "stores/bank/iavl.sqlite", "stores/staking/iavl.sqlite"]) {
      expect(cfg.stdout).toContain(`- path: ${JSON.stringify(join(dir, rel))}`);
      expect(cfg.stdout).toContain(`- url: "s3://bucket.localhost:9000/chain/${rel}"`);
    }
    expect(cfg.stdout.match(/sync-interval: 250ms/g)).toHaveLength(3);
    expect(cfg.stdout.match(/monitor-interval: 250ms/g)).toHaveLength(3);

    const [notEmpty, both, badTime, badInterval, badProgress, verboseProgress] = await Promise.all([
      iavlite(["restore", "file:///nowhere", dir]),
      iavlite(["restore", "file:///nowhere", join(base, "x"), "--version", "3", "--timestamp", "2025-01-01T00:00:00Z"]),
      iavlite(["restore", "file:///nowhere", join(base, "y"), "--timestamp", "yesterday"]),
      iavlite(["replicate", dir, "--to", "file:///nowhere", "--sync-interval", "fast"]),
      iavlite(["replicate", dir, "--to", "file:///nowhere", "--progress", "often"]),
      iavlite(["replicate", dir, "--to", "file:///nowhere", "--progress", "10s", "--verbose"]),
    ]);
    expect([notEmpty.code, (notEmpty.json["error"] as { message: string }).message]).toEqual([2, expect.stringContaining("not an empty folder")]);
    expect(both.code).toBe(2);
    expect((badTime.json["error"] as { message: string }).message).toContain("--timestamp must be an ISO 8601 time");
    expect((badInterval.json["error"] as { message: string }).message).toContain("--sync-interval must be a duration");
    expect([badProgress.code, (badProgress.json["error"] as { message: string }).message]).toEqual([2, expect.stringContaining("--progress must be a duration")]);
    expect([verboseProgress.code, (verboseProgress.json["error"] as { message: string }).message]).toEqual([2, expect.stringMatching(/--verbose.*--progress/)]);
  }, 60_000);
});

describe("a time between a Litestream snapshot and the WAL it needs", () => {
  it("is refused as CORRUPT naming the file, where Litestream returns its snapshot alone, torn; the replica restores whole", async () => {
    const base = tempDir("iavlite-litestream-torn-");
    const dir = join(base, "data");
    const replica = join(base, "replica");
    const text = (s: string): Uint8Array => new TextEncoder().encode(s);
    const commit = (t: Tree, v: number): void => {
      for (let i = 0; i < 400; i++) t.set(text(`key-${v * 1000 + i}`), text(`value ${i} of version ${v} `.repeat(8)));
      t.commit();
    };
    // Five versions checkpointed into the file, three in the WAL that a reader then holds back, four more after them.
    let t = Tree.open(dir);
    for (let v = 1; v <= 5; v++) commit(t, v);
    t.close();
    t = Tree.open(dir, { walCheckpoints: "external" });
    for (let v = 6; v <= 8; v++) commit(t, v);
    const reader = new Database(join(dir, "iavl.sqlite"), { readonly: true });
    reader.exec("BEGIN");
    reader.prepare("SELECT count(*) FROM versions").get();
    for (let v = 9; v <= 12; v++) commit(t, v);
    const hash = toHex(t.hash);
    // The checkpoint Litestream runs before it copies the file stops at the reader's versions and skips each page
    // changed again after them: the file it copies as its snapshot mixes pages of versions 5 and 8.
    const rep = new Child([main, "replicate", dir, "--to", replica, "--sync-interval", "100ms", "--verbose"]);
    try {
      // Stopped before its first WAL segment, Litestream would leave a generation its restore panics on.
      await rep.until(() => rep.stdout.includes('msg="wal segment written"'), "the first WAL segment");
    } finally {
      reader.exec("ROLLBACK");
      reader.close();
      await rep.stop("SIGTERM");
      t.close();
    }
    // The WAL shipped a minute after the snapshot, as a busy machine ships a big first WAL late.
    const gen = join(replica, "iavl.sqlite", "generations", readdirSync(join(replica, "iavl.sqlite", "generations"))[0]!);
    const snapshotAt = statSync(join(gen, "snapshots", "00000000.snapshot.lz4")).mtimeMs;
    const shipped = new Date(snapshotAt + 60_000);
    for (const f of readdirSync(join(gen, "wal"))) utimesSync(join(gen, "wal", f), shipped, shipped);

    const [between, latest] = await Promise.all([
      iavlite(["restore", replica, join(base, "between"), "--timestamp", new Date(snapshotAt + 1_000).toISOString()]),
      iavlite(["restore", replica, join(base, "latest")]),
    ]);
    const error = between.json["error"] as { code: string; message: string } | undefined;
    expect([between.code, error?.code], between.out).toEqual([1, "CORRUPT"]);
    expect(error!.message).toMatch(/^iavl\.sqlite as litestream restored it from .* as of .* is not whole \(SQLite finds: .+\): at that time the replica held only Litestream's snapshot of it/);
    // Nothing half restored is left to be opened.
    expect(existsSync(join(base, "between"))).toBe(false);
    // The replica itself is sound: restored with the WAL after the snapshot, it is whole at the last version.
    expect([latest.code, latest.json["version"], latest.json["hash"]], latest.out).toEqual([0, 12, hash]);
  }, 120_000);
});
