/**
 * The CLI's one convention on a multi-store folder shaped as `npm start` leaves it (./data with stores bank, lockup
 * and staking, versions 201 … 300 kept), made here by the library in ~2 s: every example of `--help` run as written,
 * each command on every store or those --store names, one JSON value naming each store, spans checked before any
 * output, and the same exit status for the same kind of mistake.
 */
import { spawn } from "node:child_process";
import { cpSync, mkdirSync, readdirSync, watch, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it, inject } from "vitest";
import { MultiTree, toHex } from "../src/index.js";
import { tempDir } from "./backends.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const main = inject("cli");
const NAMES = ["bank", "lockup", "staking"];
const enc = new TextEncoder();

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `iavlite args…` in `cwd`. */
function cli(args: string[], cwd = root): Promise<Run> {
  return collect(spawn(process.execPath, [main, ...args], { cwd, stdio: ["ignore", "pipe", "pipe"] }));
}

/** Runs a shell line as an operator types it, with `iavlite` on the PATH. */
function shell(line: string, cwd: string, bin: string): Promise<Run> {
  return collect(spawn("bash", ["-c", `set -o pipefail; ${line}`], { cwd, env: { ...process.env, PATH: `${bin}:${process.env["PATH"]}` }, stdio: ["ignore", "pipe", "pipe"] }));
}

function collect(child: ReturnType<typeof spawn>): Promise<Run> {
  return new Promise((resolve, reject) => {
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (b: Buffer) => (stdout += b.toString()));
    child.stderr!.on("data", (b: Buffer) => (stderr += b.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** Runs `jobs` at most `n` at a time (2 shared cores). */
async function limited<T>(jobs: Array<() => Promise<T>>, n = 3): Promise<T[]> {
  const out: T[] = new Array<T>(jobs.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < jobs.length) {
        const i = next++;
        out[i] = await jobs[i]!();
      }
    }),
  );
  return out;
}

/** The folder every test copies: 300 versions of three stores, pruned to the last 100, as one `npm start` leaves it. */
let template: string;
/** App hash and bank's root hash of each version. */
const appHashes: string[] = [];
const bankRoots: string[] = [];
const KEY = "key-1";

beforeAll(async () => {
  template = tempDir("iavlite-cli-multi-");
  const m = MultiTree.open(join(template, "data"), { stores: NAMES, checkpointInterval: 50 });
  for (let v = 1; v <= 300; v++) {
    for (const n of NAMES) for (let i = 0; i < 8; i++) m.tree(n).set(enc.encode(`key-${(v * 7 + i * 13) % 200}`), enc.encode(`${n}-${v}-${i}`));
    appHashes[v] = toHex(m.commit().appHash);
    bankRoots[v] = toHex(m.tree("bank").hash);
  }
  await m.prune(200);
  m.close();
}, 60_000);

/** A fresh copy of the folder; gives the working folder that holds `data`. */
function fresh(): string {
  const cwd = tempDir("iavlite-cli-multi-run-");
  cpSync(template, cwd, { recursive: true });
  return cwd;
}

describe("iavlite --help examples", () => {
  it("every example runs as written on the folder npm start makes (rollback without --yes exits 1 by design)", async () => {
    const help = await cli(["--help"]);
    expect(help.code).toBe(0);
    const examples = help.stdout
      .slice(help.stdout.indexOf("Examples ("))
      .split("\n")
      .filter((l) => l.startsWith("  $ "))
      .map((l) => l.slice(4).replace(/\s+#.*$/, "").trim());
    expect(examples.length).toBeGreaterThanOrEqual(12);
    const cwd = fresh();
    const bin = join(cwd, "bin");
    mkdirSync(bin);
    writeFileSync(join(bin, "iavlite"), `#!/bin/sh\nexec "${process.execPath}" "${main}" "$@"\n`, { mode: 0o755 });
    const key = Buffer.from(KEY).toString("hex");
    // In order, as an operator follows them: the prune and rollback before the export and import.
    for (const example of examples) {
      const line = example.replaceAll("<key>", key).replaceAll("<root hex>", bankRoots[290]!);
      expect(line, "a placeholder left").not.toMatch(/<[^>]*>/);
      if (/^iavlite serve /.test(line)) {
        await serveExample(line, cwd, bin);
        continue;
      }
      if (/^iavlite replicate /.test(line) && !line.includes("--config-only")) {
        await replicateExample(line, cwd, bin);
        continue;
      }
      const r = await shell(line, cwd, bin);
      const want = /^iavlite rollback .*--to \d+$/.test(line) ? 1 : 0;
      expect({ line, code: r.code, stderr: r.stderr }).toEqual({ line, code: want, stderr: want === 0 ? expect.any(String) : expect.stringContaining("--yes") });
    }
  }, 180_000);
});

/** Runs the replicate example until Litestream shipped every file of the folder, stops it with SIGTERM: exit 0. */
async function replicateExample(line: string, cwd: string, bin: string): Promise<void> {
  const child = spawn("bash", ["-c", `exec ${line}`], { cwd, env: { ...process.env, PATH: `${bin}:${process.env["PATH"]}` }, stdio: ["ignore", "pipe", "pipe"] });
  const done = collect(child);
  let seen = "";
  const shipped = new Promise<void>((resolve, reject) => {
    // Litestream logs each file's first snapshot (replicate counts the WAL segments after it): the marker and the
    // three stores.
    const look = (b: Buffer): void => {
      seen += b.toString();
      if ((seen.match(/snapshot written/g) ?? []).length >= 4) resolve();
    };
    child.stdout!.on("data", look);
    child.stderr!.on("data", look);
    void done.then((r) => reject(new Error(`replicate ended: ${r.stderr}`)));
  });
  await shipped;
  // A generation is restorable once its first WAL segment follows its snapshot: stopped between the two, Litestream
  // leaves one that its restore panics on ("generation name required").
  await shippedWal(join(cwd, "backup"), 4);
  child.kill("SIGTERM");
  expect((await done).code, seen.slice(-2000)).toBe(0);
}

/** Resolves once `count` generations under `backup` (file replicas) each hold a WAL segment; looks again as files appear. */
async function shippedWal(backup: string, count: number): Promise<void> {
  const ready = (): boolean => {
    const files = readdirSync(backup, { recursive: true }) as string[];
    const generations = new Set(files.map((f) => /^(.*\/generations\/[^/]+)\//.exec(f)?.[1]).filter((g) => g !== undefined));
    const withWal = [...generations].filter((g) => files.some((f) => f.startsWith(`${g}/wal/`) && f.endsWith(".wal.lz4")));
    return withWal.length >= count;
  };
  while (!ready()) await new Promise<void>((resolve) => {
    const w = watch(backup, { recursive: true }, () => (w.close(), resolve()));
    // A file written between the look and the watch would be missed: look once more now that the watch is on.
    if (ready()) w.close(), resolve();
  });
}

/** Runs the serve example until it listens, asks it something, stops it with SIGTERM: exit 0. */
async function serveExample(line: string, cwd: string, bin: string): Promise<void> {
  // The port as written may be taken on this machine: any free one shows the same.
  const child = spawn("bash", ["-c", `exec ${line.replace(/--port \d+/, "--port 0")}`], { cwd, env: { ...process.env, PATH: `${bin}:${process.env["PATH"]}` }, stdio: ["ignore", "pipe", "pipe"] });
  const done = collect(child);
  const url = await new Promise<string>((resolve, reject) => {
    let seen = "";
    child.stdout!.on("data", (b: Buffer) => {
      seen += b.toString();
      const m = /listening on (\S+)/.exec(seen);
      if (m !== null) resolve(m[1]!);
    });
    void done.then((r) => reject(new Error(`serve ended: ${r.stderr}`)));
  });
  const status = (await (await fetch(`${url}/v1/status`)).json()) as { latest: number; appHash: string };
  expect([status.latest, status.appHash]).toEqual([290, appHashes[290]]);
  child.kill("SIGTERM");
  expect((await done).code).toBe(0);
}

describe("each command on a multi-store folder", () => {
  it("info: one JSON value with the app hash, naming each store; --store narrows it", async () => {
    const cwd = fresh();
    const [all, one, text] = await Promise.all([
      cli(["info", "data", "--json"], cwd),
      cli(["info", "data", "--store", "lockup", "--json"], cwd),
      cli(["info", "data"], cwd),
    ]);
    expect(all.code).toBe(0);
    const a = JSON.parse(all.stdout) as { version: number; appHash: string; stores: Array<{ name: string; versions: { first: number; last: number } }> };
    expect([a.version, a.appHash]).toEqual([300, appHashes[300]]);
    expect(a.stores.map((s) => [s.name, s.versions.first, s.versions.last])).toEqual(NAMES.map((n) => [n, 201, 300]));
    expect((JSON.parse(one.stdout) as { stores: Array<{ name: string }> }).stores.map((s) => s.name)).toEqual(["lockup"]);
    expect(text.stdout).toContain(`app hash     ${appHashes[300]} (version 300`);
    expect(text.stdout.match(/── store/g)).toHaveLength(3);
  });

  it("get: the key in every store, one line or one JSON value naming each; proofs up to the app hash", async () => {
    const cwd = fresh();
    const [text, json, proved, absent] = await Promise.all([
      cli(["get", "data", KEY, "--version", "250"], cwd),
      cli(["get", "data", KEY, "--json", "--store", "bank", "--store", "staking"], cwd),
      cli(["get", "data", KEY, "--prove", "--json"], cwd),
      cli(["get", "data", "no-such-key"], cwd),
    ]);
    expect(text.code).toBe(0);
    expect(text.stdout.split("\n").filter(Boolean).map((l) => l.split(/\s+/)[0])).toEqual(NAMES);
    expect(text.stdout).toMatch(/^bank +bank-\d+-\d+$/m);
    const j = JSON.parse(json.stdout) as { version: number; appHash: string; stores: Array<{ name: string; found: boolean }> };
    expect([j.version, j.appHash, j.stores.map((s) => [s.name, s.found])]).toEqual([300, appHashes[300], [["bank", true], ["staking", true]]]);
    expect(proved.code).toBe(0);
    const p = JSON.parse(proved.stdout) as { stores: Array<{ verified: boolean; appVerified: boolean; root: string }> };
    expect(p.stores.map((s) => [s.verified, s.appVerified])).toEqual(NAMES.map(() => [true, true]));
    expect(p.stores[0]!.root).toBe(bankRoots[300]);
    expect(absent.code).toBe(1);
    expect(absent.stderr).toContain("not found in any store at version 300");
  });

  it("get: exit 1 when no store has the key, with --prove and --json too (the proofs of absence still printed); 0 when one has it", async () => {
    const cwd = fresh();
    const cases: Array<[string[], number]> = [
      [["no-such-key", "--prove"], 1],
      [["no-such-key", "--prove", "--json"], 1],
      [["no-such-key", "--json", "--store", "bank"], 1],
      [[KEY, "--prove", "--store", "bank", "--store", "lockup"], 0],
    ];
    const runs = await limited(cases.map(([args]) => () => cli(["get", "data", ...args], cwd)));
    expect(runs.map((r, i) => [cases[i]![0], r.code])).toEqual(cases);
    const [text, json] = runs;
    expect(text!.stdout.match(/non-membership proof verified/g)).toHaveLength(3);
    expect(text!.stdout.match(/the root is proven under the app hash/g)).toHaveLength(3);
    expect(text!.stderr).toContain("key no-such-key not found in any store at version 300");
    const j = JSON.parse(json!.stdout) as { stores: Array<{ name: string; found: boolean; verified: boolean; appVerified: boolean }> };
    expect(j.stores.map((s) => [s.name, s.found, s.verified, s.appVerified])).toEqual(NAMES.map((n) => [n, false, true, true]));
    expect(JSON.parse(runs[2]!.stdout)).toMatchObject({ stores: [{ name: "bank", found: false }] });
  });

  it("changes: lines naming their store; a span beyond the latest or the kept versions fails before any output", async () => {
    const cwd = fresh();
    const [json, beyond, pruned, backwards] = await Promise.all([
      cli(["changes", "data", "--from", "299", "--to", "300", "--json"], cwd),
      cli(["changes", "data", "--store", "bank", "--from", "290", "--to", "99999"], cwd),
      cli(["changes", "data", "--from", "150", "--to", "210", "--json"], cwd),
      cli(["changes", "data", "--from", "210", "--to", "205"], cwd),
    ]);
    expect(json.code).toBe(0);
    const rows = json.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l) as { store: string; version: number });
    expect([...new Set(rows.map((r) => r.store))]).toEqual(NAMES);
    expect(rows.every((r) => r.version === 299 || r.version === 300)).toBe(true);
    expect([beyond.code, beyond.stdout]).toEqual([1, ""]);
    expect(beyond.stderr).toMatch(/^iavlite: VERSION_NOT_FOUND: /);
    expect(pruned.code).toBe(1);
    expect(JSON.parse(pruned.stdout)).toMatchObject({ error: { code: "VERSION_PRUNED" } });
    expect([backwards.code, backwards.stdout]).toEqual([2, ""]);
  });

  it("verify: one JSON value naming each store", async () => {
    const cwd = fresh();
    const [all, one] = await Promise.all([cli(["verify", "data", "--json"], cwd), cli(["verify", "data", "--store", "staking", "--all", "--json"], cwd)]);
    expect(all.code).toBe(0);
    const a = JSON.parse(all.stdout) as { ok: boolean; stores: Array<{ name: string; ok: boolean; reports: unknown[] }> };
    expect([a.ok, a.stores.map((s) => [s.name, s.ok, s.reports.length])]).toEqual([true, NAMES.map((n) => [n, true, 1])]);
    const o = JSON.parse(one.stdout) as { stores: Array<{ name: string; reports: unknown[] }> };
    expect(o.stores.map((s) => [s.name, s.reports.length])).toEqual([["staking", 100]]);
  });

  it("prune and rollback: every store together; prune --store prunes those named, rollback --store is a usage error", async () => {
    const cwd = fresh();
    const one = await cli(["prune", "data", "--store", "lockup", "--keep-recent", "10", "--json"], cwd);
    expect(one.code, one.stderr).toBe(0);
    const o = JSON.parse(one.stdout) as { stores: Array<{ name: string; target: number; pruned: number }> };
    expect(o.stores.map((s) => [s.name, s.target, s.pruned])).toEqual([["lockup", 290, 90]]);
    const all = await cli(["prune", "data", "--keep-recent", "50", "--json"], cwd);
    expect(all.code, all.stderr).toBe(0);
    expect(JSON.parse(all.stdout)).toMatchObject({ target: 250, latest: 300 });
    const [alone, back] = [await cli(["rollback", "data", "--store", "bank", "--to", "295", "--yes"], cwd), await cli(["rollback", "data", "--to", "295", "--yes", "--json"], cwd)];
    expect(alone.code).toBe(2);
    expect(back.code, back.stderr).toBe(0);
    expect(JSON.parse(back.stdout)).toMatchObject({ to: 295, appHash: appHashes[295], done: true });
    // A safety net: four CLI processes, one after another, took 48 s beside two busy loops.
  }, 180_000);

  it("export needs one --store (a stream is one store); import builds a plain store and refuses --store", async () => {
    const cwd = fresh();
    const [none, two, imp] = await Promise.all([
      cli(["export", "data", "-o", "x.snap"], cwd),
      cli(["export", "data", "--store", "bank", "--store", "lockup", "-o", "x.snap"], cwd),
      cli(["import", "copy", "--store", "bank", "--version", "290", "-i", "x.snap"], cwd),
    ]);
    for (const r of [none, two, imp]) expect([r.code, r.stderr.split("\n").filter(Boolean).length]).toEqual([2, 1]);
    expect(none.stderr).toContain("pass one --store (stores: bank, lockup, staking)");
    const exp = await cli(["export", "data", "--store", "bank", "--version", "290", "-o", "b.snap", "--json"], cwd);
    expect(exp.code, exp.stderr).toBe(0);
    expect(JSON.parse(exp.stdout)).toMatchObject({ store: "bank", version: 290, hash: bankRoots[290] });
    const back = await cli(["import", "copy", "--version", "290", "--hash", bankRoots[290]!, "-i", "b.snap", "--json"], cwd);
    expect(back.code, back.stderr).toBe(0);
  });
});

describe("iavlite serve under a parent that does not pass on signals", () => {
  it("stops when its parent process is gone (npx's shell dies of SIGTERM and leaves the server to init)", async () => {
    const cwd = fresh();
    // `; true` keeps sh from exec-ing node, as npx's `sh -c` is left between npm and the bin.
    const sh = spawn("sh", ["-c", `"${process.execPath}" "${main}" serve data --port 0; true`], { cwd, stdio: ["ignore", "pipe", "pipe"] });
    const done = collect(sh);
    const url = await new Promise<string>((resolve) => {
      let seen = "";
      sh.stdout!.on("data", (b: Buffer) => {
        seen += b.toString();
        const m = /listening on (\S+)/.exec(seen);
        if (m !== null) resolve(m[1]!);
      });
    });
    expect((await fetch(`${url}/v1/status`)).status).toBe(200);
    sh.kill("SIGKILL");
    // The pipes close once the server, which holds them too, has exited: it would not without seeing its parent gone
    // (the test's timeout is the limit, not a clock).
    await done;
    await expect(fetch(`${url}/v1/status`)).rejects.toThrow();
  }, 60_000);
});

describe("one exit status per kind of mistake", () => {
  it("2 for the command line (with a sentence, not a schema), 1 for the store's refusals; --version prints the version", async () => {
    const cwd = fresh();
    const cases: Array<[string[], number, RegExp]> = [
      [["get", "data", "--store", "nope", KEY], 2, /^iavlite: data has no store nope \(stores: bank, lockup, staking\)$/],
      [["serve", "data", "--store", "nope"], 2, /^iavlite: data has no store nope/],
      [["info", "data", "--store", "nope"], 2, /^iavlite: data has no store nope/],
      [["serve", "data", "--refresh-ms", "-5"], 2, /^iavlite: --refresh-ms must be an integer from 0 to 60000, got "-5"$/],
      [["serve", "data", "--refresh-ms", "999999"], 2, /^iavlite: --refresh-ms must be an integer from 0 to 60000, got "999999"$/],
      [["serve", "data", "--port", "70000"], 2, /^iavlite: --port must be an integer from 0 to 65535/],
      [["serve", "data", "--json"], 2, /^iavlite: serve does not take --json$/],
      [["info", "data", "--hex"], 2, /^iavlite: info does not take --hex$/],
      [["bench", "--store", "bank"], 2, /^iavlite: bench does not take --store$/],
      [["prune", "data", "--keep-recent", "0"], 2, /^iavlite: --keep-recent must be an integer ≥ 1, got "0"$/],
      [["changes", "data", "--from", "5", "--to", "4"], 2, /^iavlite: --from 5 is after --to 4$/],
      [["rollback", "data", "--store", "bank", "--to", "290"], 2, /^iavlite: data is a multi-store folder/],
      [["get", "data", KEY, "--version", "100"], 1, /^iavlite: VERSION_PRUNED: /],
      [["get", "data", KEY, "--version", "400"], 1, /^iavlite: VERSION_NOT_FOUND: /],
      [["info", "no-such-folder"], 1, /^iavlite: NOT_A_STORE: /],
    ];
    const runs = await limited(cases.map(([args]) => () => cli(args, cwd)));
    for (const [i, r] of runs.entries()) {
      const [args, code, message] = cases[i]!;
      expect({ args, code: r.code, stderr: r.stderr.trim() }).toEqual({ args, code, stderr: expect.stringMatching(message) });
    }
    const [v, short] = await Promise.all([cli(["--version"]), cli(["-V"])]);
    const pkg = (await import("../package.json", { with: { type: "json" } })).default as { version: string };
    expect([v.code, v.stdout, short.stdout]).toEqual([0, `${pkg.version}\n`, `${pkg.version}\n`]);
  }, 120_000);
});
