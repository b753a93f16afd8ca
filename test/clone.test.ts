import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { tempDir } from "./backends.js";

const repo = fileURLToPath(new URL("..", import.meta.url));

/** Runs a command in `cwd`, failing the test with its output when it fails. */
function run(cwd: string, cmd: string, args: string[], env: Record<string, string> = {}): string {
  const r = spawnSync(cmd, args, { cwd, env: { ...process.env, ...env }, encoding: "utf8", maxBuffer: 64 * 2 ** 20 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout + r.stderr;
}

/** The bytes of the files under `dir`: what `du -sb` counts, less the folders themselves. */
function fileBytes(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce((n, e) => n + (e.isDirectory() ? fileBytes(join(dir, e.name)) : statSync(join(dir, e.name)).size), 0);
}

describe("a fresh clone, as a newcomer meets it", () => {
  it("builds, runs npm start twice (the chain continues) and the CLI on the store it made", () => {
    const dir = join(tempDir(), "iavlite");
    // What is committed is what a newcomer gets. The install itself is `.ci/run`'s `npm ci` on a clean checkout (two
    // to three minutes here, most of it compiling better-sqlite3); this clone borrows its packages and builds as
    // `npm ci`'s prepare step does.
    execFileSync("git", ["clone", "--quiet", repo, dir]);
    symlinkSync(join(repo, "node_modules"), join(dir, "node_modules"));
    run(dir, "npm", ["run", "build"]);
    expect(existsSync(join(dir, "dist/src/index.js"))).toBe(true);

    const env = { IAVLITE_VERSIONS: "40", IAVLITE_KEEP: "20" };
    const first = run(dir, "npm", ["start"], env);
    expect(first).toMatch(/versions 1\.\.40 in/);
    expect(first).toMatch(/0 mismatches/);
    expect(first).toMatch(/verified by @confio\/ics23: true/);
    // The disk use it reports is what the files take once it has ended (the stores' WALs, gone at the close, are not).
    expect(Number(/disk use .*\((\d+) bytes, after the close\)/.exec(first)?.[1])).toBe(fileBytes(join(dir, "data")));
    const second = run(dir, "npm", ["start"], env);
    expect(second).toMatch(/continuing the chain in data from version 40/);
    expect(second).toMatch(/versions 41\.\.80 in/);
    expect(second).toMatch(/0 mismatches/);

    const cli = (...args: string[]): string => run(dir, process.execPath, ["dist/src/cli/main.js", ...args]);
    // On a multi-store folder the JSON names each store, also when --store narrows it to one.
    const info = (JSON.parse(cli("info", "data", "--store", "bank", "--json")) as { stores: Array<{ versions: { last: number; count: number } }> }).stores[0]!;
    expect(info.versions.last).toBe(80);
    // The job prunes in the background and once more at the end, to the 20 versions asked for.
    expect(info.versions.count).toBe(20);
    // A key the bank store's latest version wrote, proven; an absent one is proven absent and exits 1.
    const key = (JSON.parse(cli("changes", "data", "--store", "bank", "--from", "80", "--to", "80", "--json", "--hex").split("\n")[0]!) as { key: string }).key;
    expect(cli("get", "data", "--store", "bank", "--hex", key, "--prove")).toMatch(/proof verified/);
    const absent = spawnSync(process.execPath, ["dist/src/cli/main.js", "get", "data", "--store", "bank", "--hex", "00", "--prove"], { cwd: dir, encoding: "utf8" });
    expect([absent.status, absent.stdout]).toEqual([1, expect.stringMatching(/non-membership proof verified/)]);
    const verify = cli("verify", "data");
    expect(verify).toMatch(/all ok/);
    expect(verify.match(/── store/g)?.length).toBe(3);
  }, 900_000);
});
