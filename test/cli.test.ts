/**
 * The `iavlite` CLI run as a real child process (node on the package built for the run, test/global-setup.ts) against stores built here.
 */
import { spawn } from "node:child_process";
import { cpSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { beforeAll, describe, expect, it, inject } from "vitest";
import { EMPTY_HASH, MultiTree, toHex, Tree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { applyVersion } from "./fixtures/version-ops.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const main = inject("cli");

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  raw: Buffer;
}

/** Runs `iavlite args…`, feeding `input` to stdin (an empty stdin otherwise). */
function cli(args: string[], input?: Buffer): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [main, ...args], { cwd: root, stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (b: Buffer) => out.push(b));
    child.stderr.on("data", (b: Buffer) => err.push(b));
    child.on("error", reject);
    child.on("close", (code) => {
      const raw = Buffer.concat(out);
      resolve({ code, stdout: raw.toString("utf8"), stderr: Buffer.concat(err).toString("utf8"), raw });
    });
    child.stdin.end(input);
  });
}

/** The lines of `s`, without the empty one after the last newline. */
function lines(s: string): string[] {
  return s.split("\n").filter((l) => l.length > 0);
}

const enc = new TextEncoder();
const VERSIONS = 10;
const binKey = (v: number): Uint8Array => new Uint8Array([0xff, 0x00, v]);

/** The store every test reads: ~300 keys over 10 versions, with sets, overwrites, removes and binary keys. */
let store: string;
const hashes: string[] = [""];
const model: Array<Map<string, string>> = [new Map()];

beforeAll(() => {
  store = tempDir("iavlite-cli-");
  const t = Tree.open(store, { checkpointInterval: 3 });
  const m = new Map<string, string>();
  for (let v = 1; v <= VERSIONS; v++) {
    for (let i = 0; i < 40; i++) {
      const k = `key-${(v * 37 + i * 13) % 300}`;
      const val = `value-${v}-${i}`;
      t.set(enc.encode(k), enc.encode(val));
      m.set(k, val);
    }
    if (v > 2) {
      for (let i = 0; i < 5; i++) {
        const k = `key-${(v * 11 + i) % 300}`;
        t.remove(enc.encode(k));
        m.delete(k);
      }
    }
    t.set(binKey(v), new Uint8Array([1, 2, 3, v]));
    hashes.push(toHex(t.commit().hash));
    model.push(new Map(m));
  }
  t.close();
});

/** A present key of version `v` (with its value), and an absent one. */
function presentKey(v: number): [string, string] {
  return [...model[v]!.entries()].sort()[3]!;
}

/** A copy of the test store, for commands that change it. */
function copy(): string {
  const d = tempDir("iavlite-cli-copy-");
  cpSync(store, d, { recursive: true });
  return d;
}

describe("iavlite info", () => {
  it("summarizes the store as text and as JSON, and tells a live writer", async () => {
    const [text, json, notStore] = await Promise.all([cli(["info", store]), cli(["info", store, "--json"]), cli(["info", tempDir()])]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`versions     ${VERSIONS} kept, 1 … ${VERSIONS}`);
    expect(text.stdout).toContain(`root ${hashes[VERSIONS]}`);
    expect(json.code).toBe(0);
    const info = JSON.parse(json.stdout) as {
      versions: { count: number; first: number; last: number };
      latest: { version: number; hash: string; size: number };
      checkpoints: { count: number; latest: number };
      shards: Array<{ id: number; branchRows: number }>;
      orphanedBranches: number;
      pageRows: number;
      leafRows: number;
      pages: { pageSize: number; pageCount: number; freelistCount: number };
      disk: { db: number; total: number };
      writer: { held: boolean };
    };
    expect(info.versions).toEqual({ count: VERSIONS, first: 1, last: VERSIONS });
    expect(info.latest).toEqual({ version: VERSIONS, hash: hashes[VERSIONS], size: model[VERSIONS]!.size + VERSIONS });
    expect(info.checkpoints.count).toBeGreaterThanOrEqual(3);
    expect(info.shards.length).toBe(1);
    expect(info.shards[0]!.branchRows).toBeGreaterThan(0);
    // Nothing pruned yet: every branch a later version replaced is still stored, awaiting a prune.
    expect(info.orphanedBranches).toBeGreaterThan(0);
    // Layout 3: the records name replaced branch rows and pages.
    expect(info.pageRows).toBeGreaterThan(0);
    expect(info.orphanedBranches).toBeLessThan(info.shards[0]!.branchRows + info.pageRows);
    expect(text.stdout).toContain(`replaced     ${info.orphanedBranches} branch rows`);
    expect(info.leafRows).toBeGreaterThan(300);
    expect(info.pages.pageSize).toBeGreaterThan(0);
    expect(info.disk.db).toBeGreaterThan(0);
    expect(info.writer.held).toBe(false);
    expect(notStore.code).toBe(1);
    expect(lines(notStore.stderr)).toEqual([expect.stringMatching(/^iavlite: NOT_A_STORE: /)]);

    // While this process holds the writer lock, info names it.
    const d = copy();
    const t = Tree.open(d);
    try {
      const held = await cli(["info", d, "--json"]);
      const w = (JSON.parse(held.stdout) as { writer: { held: boolean; holder: { pid: number } } }).writer;
      expect(w.held).toBe(true);
      expect(w.holder.pid).toBe(process.pid);
    } finally {
      t.close();
    }
  });
});

describe("iavlite get", () => {
  it("prints values at any version, with proofs verified by @confio/ics23", async () => {
    const [k, v] = presentKey(VERSIONS);
    const [k2, v2] = presentKey(2);
    const [latest, old, absent, proved, absentProved, bin, json] = await Promise.all([
      cli(["get", store, k]),
      cli(["get", store, k2, "--version", "2"]),
      cli(["get", store, "no-such-key"]),
      cli(["get", store, k, "--prove"]),
      cli(["get", store, "no-such-key", "--prove"]),
      cli(["--hex", "get", store, "ff0005", "--version", "7"]),
      cli(["get", store, k, "--json", "--prove"]),
    ]);
    expect([latest.code, latest.stdout]).toEqual([0, `${v}\n`]);
    expect([old.code, old.stdout]).toEqual([0, `${v2}\n`]);
    expect(absent.code).toBe(1);
    expect(absent.stdout).toBe("");
    expect(lines(absent.stderr)).toEqual([`iavlite: key no-such-key not found at version ${VERSIONS}`]);
    expect(proved.code).toBe(0);
    expect(proved.stdout).toMatch(/^proof +[0-9a-f]+$/m);
    expect(proved.stdout).toContain(`membership proof verified against the root of version ${VERSIONS}`);
    // Absent is exit 1 with --prove too; the proof of absence is still printed, and verified.
    expect(absentProved.code).toBe(1);
    expect(absentProved.stdout).toContain("value    (absent)");
    expect(absentProved.stdout).toContain("non-membership proof verified");
    expect(lines(absentProved.stderr)).toEqual([`iavlite: key no-such-key not found at version ${VERSIONS}`]);
    // Binary key and value: hex in, hex out.
    expect([bin.code, bin.stdout]).toEqual([0, "01020305\n"]);
    const j = JSON.parse(json.stdout) as Record<string, unknown>;
    expect(j).toMatchObject({ version: VERSIONS, root: hashes[VERSIONS], key: k, keyEncoding: "utf8", found: true, value: v, valueEncoding: "utf8", verified: true, proofKind: "membership" });
  });

  it("exits 1 for an absent key on every path (text, --json, --prove, an older --version), its proof of absence still printed", async () => {
    // A key of version 2 that version 10 no longer holds: absent at the latest, present at --version 2.
    const gone = [...model[2]!.keys()].find((key) => !model[VERSIONS]!.has(key))!;
    const cases: Array<[string[], number]> = [
      [["no-such-key", "--json"], 1],
      [["no-such-key", "--prove", "--json"], 1],
      [[gone], 1],
      [[gone, "--prove"], 1],
      [[gone, "--version", "2", "--prove", "--json"], 0],
    ];
    const runs = await Promise.all(cases.map(([args]) => cli(["get", store, ...args])));
    expect(runs.map((r, i) => [cases[i]![0], r.code])).toEqual(cases);
    // JSON: one value saying so (no error value); with --prove the proof of absence, verified.
    const [plain, proved] = runs.slice(0, 2).map((r) => JSON.parse(r.stdout) as Record<string, unknown>);
    for (const j of [plain!, proved!]) expect(j).toMatchObject({ key: "no-such-key", found: false, version: VERSIONS });
    for (const j of [plain!, proved!]) expect(j).not.toHaveProperty("error");
    expect(proved).toMatchObject({ proofKind: "non-membership", verified: true, proof: expect.stringMatching(/^[0-9a-f]+$/) });
    expect(runs[3]!.stdout).toContain("non-membership proof verified");
    expect(lines(runs[3]!.stderr)).toEqual([`iavlite: key ${gone} not found at version ${VERSIONS}`]);
  });
});

describe("iavlite history", () => {
  it("prints the versions where a key changed, newest first, reversed, limited, as JSON lines, and refuses a span past the latest", async () => {
    // The model's changes of every key: a set where the value differs from the version before, a removal where it went.
    const changesOf = (k: string): string[] =>
      model.slice(1).flatMap((m, i) => {
        const [now, before] = [m.get(k), model[i]!.get(k)];
        if (now === before) return [];
        return [now === undefined ? `${i + 1}  removed` : `${i + 1}  set      ${now}`];
      });
    const key = [...model[VERSIONS]!.keys(), ...model[5]!.keys()].sort((a, b) => changesOf(b).length - changesOf(a).length)[0]!;
    const all = changesOf(key);
    expect(all.length).toBeGreaterThan(2);
    const [newest, reversed, limited, json, late, bad] = await Promise.all([
      cli(["history", store, key]),
      cli(["history", store, key, "--reverse", "--from", "3"]),
      cli(["history", store, key, "--limit", "2"]),
      cli(["history", store, key, "--json", "--to", "8"]),
      cli(["history", store, key, "--to", "11"]),
      cli(["history", store, key, "--from", "5", "--to", "4"]),
    ]);
    expect([newest.code, lines(newest.stdout)]).toEqual([0, [...all].reverse()]);
    expect(lines(reversed.stdout)).toEqual(all.filter((l) => Number(l.split(" ")[0]) >= 3));
    expect(lines(limited.stdout)).toEqual([...all].reverse().slice(0, 2));
    const parsed = lines(json.stdout).map((l) => JSON.parse(l) as { version: number; value: string | null });
    expect(parsed.map((e) => `${e.version}  ${e.value === null ? "removed" : `set      ${e.value}`}`)).toEqual([...all].reverse().filter((l) => Number(l.split(" ")[0]) <= 8));
    expect([late.code, lines(late.stderr)[0]]).toEqual([1, `iavlite: VERSION_NOT_FOUND: version 11 was never committed (latest is ${VERSIONS})`]);
    expect([bad.code, lines(bad.stderr)]).toEqual([2, ["iavlite: --from 5 is after --to 4"]]);
  });
});

describe("iavlite verify", () => {
  it("passes a sound store and names the key whose value row was corrupted", async () => {
    const d = copy();
    const [k] = presentKey(VERSIONS);
    const db = new Database(join(d, "iavl.sqlite"));
    const key = Buffer.from(k);
    const changed = db
      .prepare("UPDATE leaves SET value = ? WHERE key = ? AND version = (SELECT max(version) FROM leaves WHERE key = ?)")
      .run(Buffer.from("tampered"), key, key).changes;
    db.close();
    expect(changed).toBe(1);
    const [one, all, bad, badJson] = await Promise.all([
      cli(["verify", store]),
      cli(["verify", store, "--all"]),
      cli(["verify", d]),
      cli(["verify", d, "--json"]),
    ]);
    expect(one.code).toBe(0);
    expect(one.stdout).toContain(`version ${VERSIONS}: ok (${2 * (model[VERSIONS]!.size + VERSIONS) - 1} nodes`);
    expect(all.code).toBe(0);
    // A line per version, SQLite's structure check, the summary.
    expect(lines(all.stdout)).toHaveLength(VERSIONS + 2);
    expect(all.stdout).toContain("SQLite structure check: ok");
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain("root hash: rehashing every node gives");
    expect(bad.stdout).toContain(`key "${k}": its value does not match the leaf hash`);
    const r = JSON.parse(badJson.stdout) as { ok: boolean; reports: Array<{ ok: boolean; faults: string[] }> };
    expect(r.ok).toBe(false);
    expect(r.reports[0]!.faults.length).toBeGreaterThanOrEqual(1);
  });
});

describe("iavlite export / import", () => {
  it("round-trips a version through a file and through a pipe to the same hash", async () => {
    const file = join(tempDir(), "v7.snap");
    const exp = await cli(["export", store, "--version", "7", "-o", file]);
    expect(exp.code).toBe(0);
    expect(exp.stderr).toContain(`root ${hashes[7]}`);
    const piped = await cli(["export", store, "--version", "7"]);
    expect(piped.code).toBe(0);
    expect(piped.raw.equals(readFileSync(file))).toBe(true);

    const a = join(tempDir(), "a");
    const b = join(tempDir(), "b");
    const bad = join(tempDir(), "bad");
    const [fromFile, fromStdin, wrongHash] = await Promise.all([
      cli(["import", a, "--version", "7", "--hash", hashes[7]!, "-i", file]),
      cli(["import", b, "--version", "7", "--json"], piped.raw),
      cli(["import", bad, "--version", "7", "--hash", "11".repeat(32), "-i", file]),
    ]);
    expect(fromFile.code).toBe(0);
    expect(fromFile.stdout).toContain(`root ${hashes[7]}`);
    expect(fromStdin.code).toBe(0);
    expect(JSON.parse(fromStdin.stdout)).toMatchObject({ version: 7, hash: hashes[7], size: model[7]!.size + 7 });
    expect(wrongHash.code).toBe(1);
    expect(lines(wrongHash.stderr)).toEqual([expect.stringMatching(/^iavlite: INVALID_SNAPSHOT: .*differs from the expected 1111/)]);
    expect(existsSync(bad)).toBe(false);
    // The imported store reads like the original.
    const [k, v] = presentKey(7);
    const got = await cli(["get", a, k]);
    expect([got.code, got.stdout]).toEqual([0, `${v}\n`]);
  });
});

describe("iavlite import of an empty stream", () => {
  it("fails with INVALID_SNAPSHOT and leaves no store, unless --hash names the empty tree's root", async () => {
    const parent = tempDir();
    const [stdin, file, empty] = [join(parent, "stdin"), join(parent, "file"), join(parent, "empty")];
    const nothing = join(tempDir(), "nothing.snap");
    writeFileSync(nothing, "");
    const [fromStdin, fromFile, withHash] = await Promise.all([
      cli(["import", stdin, "--version", "1"]),
      cli(["import", file, "--version", "1", "-i", nothing]),
      cli(["import", empty, "--version", "1", "--hash", toHex(EMPTY_HASH), "--json"]),
    ]);
    for (const r of [fromStdin, fromFile]) {
      expect(r.code).toBe(1);
      expect(lines(r.stderr)).toEqual([expect.stringMatching(/^iavlite: INVALID_SNAPSHOT: the stream from .* is empty/)]);
    }
    expect(withHash.code).toBe(0);
    expect(JSON.parse(withHash.stdout)).toMatchObject({ version: 1, size: 0, hash: toHex(EMPTY_HASH) });
    expect(readdirSync(parent)).toEqual(["empty"]);
  });
});

describe("iavlite arguments", () => {
  it("answers a bad command line with one line on stderr and exit status 2", async () => {
    const cases = [
      ["get", store, "k", "--version", "abc"],
      ["info"],
      ["info", store, "--bogus"],
      ["frobnicate"],
      ["verify", store, "--all", "--version", "2"],
      ["--hex", "get", store, "zz"],
      ["prune", store],
    ];
    const runs = await Promise.all(cases.map((c) => cli(c)));
    for (const [i, r] of runs.entries()) {
      expect({ args: cases[i], code: r.code }).toEqual({ args: cases[i], code: 2 });
      expect(lines(r.stderr)).toHaveLength(1);
      expect(r.stderr).toMatch(/^iavlite: /);
      expect(r.stderr).not.toMatch(/\bat .*\.ts:\d+/);
    }
    const help = await cli(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Examples (");
  });
});

describe("iavlite prune / rollback", () => {
  it("prunes to the N most recent versions, and refuses while a writer holds the store", async () => {
    const d = copy();
    const pruned = await cli(["prune", d, "--keep-recent", "3"]);
    expect(pruned.code).toBe(0);
    expect(pruned.stdout).toContain(`pruned ${VERSIONS - 3} version(s) up to ${VERSIONS - 3}; kept versions ${VERSIONS - 2} … ${VERSIONS}`);
    const [info, gone, kept, every] = await Promise.all([
      cli(["info", d, "--json"]),
      cli(["get", d, "k", "--version", "2"]),
      cli(["verify", d, "--all"]),
      cli(["prune", d, "--keep-recent", "1", "--keep-every", "0"]),
    ]);
    expect((JSON.parse(info.stdout) as { versions: unknown }).versions).toEqual({ count: 3, first: VERSIONS - 2, last: VERSIONS });
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/^iavlite: VERSION_PRUNED: /);
    expect(kept.code).toBe(0);
    expect(every.code).toBe(2);
    expect(lines(every.stderr)).toHaveLength(1);

    const t = Tree.open(d);
    try {
      const [k, v] = presentKey(VERSIONS);
      const [locked, lockedRb, read] = await Promise.all([
        cli(["prune", d, "--keep-recent", "1"]),
        cli(["rollback", d, "--to", String(VERSIONS - 1), "--yes"]),
        cli(["get", d, k]),
      ]);
      // Reads go on beside the writer; only the writing commands are refused.
      expect([read.code, read.stdout]).toEqual([0, `${v}\n`]);
      for (const r of [locked, lockedRb]) {
        expect(r.code).toBe(1);
        expect(lines(r.stderr)).toEqual([expect.stringMatching(new RegExp(`^iavlite: LOCKED: .*held by process ${process.pid} `))]);
      }
    } finally {
      t.close();
    }
  });

  it("reports as reclaimed what the folder's files lost, as du counts it after the command (the WAL gone)", async () => {
    // The files' bytes, as `du -sb` counts them.
    const bytes = (dir: string): number =>
      readdirSync(dir, { withFileTypes: true }).reduce((n, e) => n + (e.isDirectory() ? bytes(join(dir, e.name)) : statSync(join(dir, e.name)).size), 0);
    // 40 versions of 400 changes among 5,000 keys each: a prune to 30 frees most of the file.
    const single = tempDir("iavlite-cli-reclaim-");
    const folder = tempDir("iavlite-cli-reclaim-multi-");
    const t = Tree.open(single, { checkpointInterval: 5, shardSize: 10 });
    const m = MultiTree.open(folder, { stores: ["a", "b"], checkpointInterval: 5, shardSize: 10 });
    for (let v = 1; v <= 40; v++) {
      applyVersion(t, v);
      t.commit();
      applyVersion(m.tree("a"), v);
      applyVersion(m.tree("b"), v + 100);
      m.commit();
    }
    t.close();
    m.close();

    const before = bytes(single);
    const one = await cli(["prune", single, "--keep-recent", "10"]);
    expect(one.code, one.stderr).toBe(0);
    const lost = before - bytes(single);
    expect(lost).toBeGreaterThan(before / 4);
    expect(one.stdout).toContain(`reclaimed ${(lost / 2 ** 20).toFixed(1)} MiB (${lost} bytes)`);

    const stores = (): number[] => ["a", "b"].map((n) => bytes(join(folder, "stores", n)));
    const beforeEach = stores();
    const all = await cli(["prune", folder, "--keep-recent", "10", "--json"]);
    expect(all.code, all.stderr).toBe(0);
    const lostEach = stores().map((after, i) => beforeEach[i]! - after);
    for (const [i, l] of lostEach.entries()) expect(l).toBeGreaterThan(beforeEach[i]! / 4);
    const p = JSON.parse(all.stdout) as { stores: Array<{ name: string; pruned: number; reclaimedBytes: number }> };
    expect(p.stores.map((x) => [x.name, x.pruned, x.reclaimedBytes])).toEqual([
      ["a", 30, lostEach[0]],
      ["b", 30, lostEach[1]],
    ]);
  }, 180_000);

  it("rolls back only with --yes, after showing what would go", async () => {
    const d = copy();
    const dry = await cli(["rollback", d, "--to", "6"]);
    expect(dry.code).toBe(1);
    expect(dry.stdout).toContain(`would delete ${VERSIONS - 6} version(s), 7 … ${VERSIONS}`);
    expect(dry.stderr).toContain("--yes");
    const done = await cli(["rollback", d, "--to", "6", "--yes"]);
    expect(done.code).toBe(0);
    expect(done.stdout).toContain(`rolled back to version 6 (root ${hashes[6]})`);
    const [info, verify] = await Promise.all([cli(["info", d, "--json"]), cli(["verify", d])]);
    expect((JSON.parse(info.stdout) as { latest: unknown }).latest).toMatchObject({ version: 6, hash: hashes[6] });
    expect(verify.code).toBe(0);
  });
});

describe("iavlite on a multi-store folder", () => {
  const NAMES = ["acc", "bank", "staking"];

  /** A closed multi-store folder of 12 versions, snapshots every 5th; the app hash of each version. */
  function multi(): { dir: string; app: string[] } {
    const dir = tempDir("iavlite-cli-multi-");
    const m = MultiTree.open(dir, { stores: NAMES, keepEvery: 5, checkpointInterval: 3 });
    const app = [""];
    for (let v = 1; v <= 12; v++) {
      for (const n of NAMES) m.tree(n).set(enc.encode(`${n}-${v % 5}`), enc.encode(`value-${v}`));
      app.push(toHex(m.commit().appHash));
    }
    m.close();
    return { dir, app };
  }

  /** Opens the folder as the chain would, and gives each store's versions and the whole version. */
  function state(dir: string): { version: number; appHash: string; versions: number[][] } {
    const m = MultiTree.open(dir, { stores: NAMES });
    try {
      return { version: m.version, appHash: toHex(m.appHash), versions: NAMES.map((n) => m.tree(n).versions()) };
    } finally {
      m.close();
    }
  }

  it("rollback: one store alone is refused; --to rolls back every store and the commit marker, and the folder opens there", async () => {
    const { dir, app } = multi();
    const [alone, aloneJson, dry] = await Promise.all([
      cli(["rollback", dir, "--store", "bank", "--to", "8", "--yes"]),
      cli(["rollback", dir, "--store", "bank", "--to", "8", "--json"]),
      cli(["rollback", dir, "--to", "8", "--json"]),
    ]);
    // A bad command line: usage, exit 2.
    expect(alone.code).toBe(2);
    expect(lines(alone.stderr)).toEqual([expect.stringMatching(/^iavlite: .*multi-store folder.*iavlite rollback .* --to 8 --yes/)]);
    expect(aloneJson.code).toBe(2);
    expect(JSON.parse(aloneJson.stdout)).toMatchObject({ error: { code: "USAGE" } });
    expect(dry.code).toBe(1);
    expect(JSON.parse(dry.stdout)).toMatchObject({ to: 8, appHash: app[8], deleted: 4, from: 9, through: 12, done: false });
    // Nothing changed.
    expect(state(dir).version).toBe(12);

    const done = await cli(["rollback", dir, "--to", "8", "--yes"]);
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toContain(`rolled back every store to version 8 (app hash ${app[8]})`);
    const s = state(dir);
    expect([s.version, s.appHash]).toEqual([8, app[8]]);
    expect(s.versions).toEqual(NAMES.map(() => [1, 2, 3, 4, 5, 6, 7, 8]));
  });

  it("prune --keep-every prunes every store and keeps the snapshots; --json is one JSON value for info, verify, prune, rollback and failures", async () => {
    const { dir, app } = multi();
    const pruned = await cli(["prune", dir, "--keep-recent", "2", "--keep-every", "5", "--json"]);
    expect(pruned.code, pruned.stderr).toBe(0);
    const p = JSON.parse(pruned.stdout) as { target: number; stores: Array<{ name: string; kept: number[] }> };
    expect(p.target).toBe(10);
    expect(p.stores.map((x) => [x.name, x.kept])).toEqual(NAMES.map((n) => [n, [5, 10, 11, 12]]));
    expect(state(dir).versions).toEqual(NAMES.map(() => [5, 10, 11, 12]));

    const [info, verify, noStore] = await Promise.all([
      cli(["info", dir, "--json"]),
      cli(["verify", dir, "--all", "--json"]),
      cli(["get", dir, "--store", "nope", "k", "--json"]),
    ]);
    expect(info.code).toBe(0);
    const i = JSON.parse(info.stdout) as { stores: Array<{ name: string; versions: { count: number } }> };
    expect(i.stores.map((x) => [x.name, x.versions.count])).toEqual(NAMES.map((n) => [n, 4]));
    expect(verify.code).toBe(0);
    const v = JSON.parse(verify.stdout) as { ok: boolean; stores: Array<{ name: string; ok: boolean; reports: unknown[]; pruned: number[] }> };
    expect(v.ok).toBe(true);
    expect(v.stores.map((x) => [x.name, x.ok, x.reports.length])).toEqual(NAMES.map((n) => [n, true, 4]));
    expect(noStore.code).toBe(2);
    expect(JSON.parse(noStore.stdout)).toMatchObject({ error: { code: "USAGE" } });
    // A rollback to a snapshot kept by --keep-every.
    const back = await cli(["rollback", dir, "--to", "5", "--json", "--yes"]);
    expect(back.code, back.stderr).toBe(0);
    expect(JSON.parse(back.stdout)).toMatchObject({ to: 5, appHash: app[5], deleted: 3, done: true });
    expect(state(dir).versions).toEqual(NAMES.map(() => [5]));
  });
});
