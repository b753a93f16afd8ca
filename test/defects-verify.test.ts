/**
 * A stored node hash that no longer matches its node is found: by `iavlite verify` (which must check every stored
 * hash, not only rehash keys and values up to the root), and, for the root, already when the store is opened.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, inject } from "vitest";
import { IavlError, Tree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { nodeArgs } from "./processes.js";
import { b, corruptStoredNodeHash, type StoredNodeKind } from "./helpers.js";
import { applyVersion } from "./fixtures/version-ops.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const main = inject("cli");

/** Runs `iavlite args…` as a child process; resolves with its exit status and output. */
function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [main, ...args], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** A child process run with tsx: its handle, its output so far, and its exit status once it ends. */
interface Child {
  p: ChildProcessWithoutNullStreams;
  stdout: () => string;
  stderr: () => string;
  done: Promise<number | null>;
}

function start(args: string[]): Child {
  const p = spawn(process.execPath, nodeArgs(args), { cwd: root, stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  p.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  p.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<number | null>((resolve, reject) => {
    p.on("error", reject);
    p.on("close", (code) => resolve(code));
  });
  return { p, stdout: () => stdout, stderr: () => stderr, done };
}

/** Resolves once `c` printed a line matching `re` on stdout; rejects when it ends first. */
function waitFor(c: Child, re: RegExp): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      if (!re.test(c.stdout())) return;
      c.p.stdout.off("data", check);
      resolve();
    };
    c.p.stdout.on("data", check);
    void c.done.then(() => reject(new Error(`ended before ${re}: ${c.stdout()} ${c.stderr()}`)));
    check();
  });
}

/** A closed one-version store of 200 keys whose branches are all stored (checkpoint at every version). */
function oneVersionStore(): string {
  const dir = tempDir();
  const t = Tree.open(dir, { checkpointInterval: 1 });
  for (let i = 0; i < 200; i++) t.set(b(`key-${String(i).padStart(3, "0")}`), b(`value-${i}`));
  t.commit();
  t.close();
  return dir;
}

describe("iavlite verify checks every stored node hash", () => {
  it("an intact store verifies (the baseline of the cases below)", async () => {
    const r = await cli(["verify", oneVersionStore(), "--all"]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
  });

  it.each<StoredNodeKind>(["branch", "leaf"])("a zeroed stored hash of a non-root %s node: exit 1, naming the node", async (which) => {
    const dir = oneVersionStore();
    const node = corruptStoredNodeHash(dir, which);
    const r = await cli(["verify", dir, "--all"]);
    const out = r.stdout + r.stderr;
    expect(r.code, out).toBe(1);
    // The fault names the node: a line with the words "stored hash" and the node's version.
    const faultLines = out.split("\n").filter((l) => /stored hash/i.test(l));
    expect(faultLines.length, out).toBeGreaterThan(0);
    expect(faultLines.some((l) => new RegExp(`\\b${node.version}\\b`).test(l)), out).toBe(true);
  }, 20_000);

  it("opening a store whose root row's hash was zeroed fails with CORRUPT", () => {
    const dir = oneVersionStore();
    corruptStoredNodeHash(dir, "root");
    let caught: unknown;
    let opened: Tree | undefined;
    try {
      opened = Tree.open(dir);
    } catch (e) {
      caught = e;
    }
    const seen = opened === undefined ? "" : ` (it opened, with hash ${Buffer.from(opened.hash).toString("hex")})`;
    opened?.close();
    expect(caught, `Tree.open must refuse the store${seen}`).toBeInstanceOf(IavlError);
    expect((caught as IavlError).code).toBe("CORRUPT");
  });

  it("verify --all beside a writer that prunes: versions pruned under it are listed apart, not as faults (exit 0, one JSON value)", async () => {
    const dir = tempDir();
    const t = Tree.open(dir, { checkpointInterval: 4, shardSize: 8 });
    for (let v = 1; v <= 30; v++) {
      applyVersion(t, v, 150, 1500);
      t.commit();
    }
    t.close();
    const writer = start([join(root, "test/fixtures/pruning-writer.ts"), dir]);
    let jsonOut = "";
    try {
      const text = start([main, "verify", dir, "--all"]);
      const json = start([main, "verify", dir, "--all", "--json"]);
      // Both have listed the versions once the text run reported some: stop them, prune under them, let them go on.
      await waitFor(text, /^version 3: /m);
      text.p.kill("SIGSTOP");
      json.p.kill("SIGSTOP");
      await waitFor(writer, /^opened$/m);
      writer.p.stdin.write("prune\n");
      await waitFor(writer, /^pruned \d+$/m);
      text.p.kill("SIGCONT");
      json.p.kill("SIGCONT");
      const [textCode, jsonCode] = await Promise.all([text.done, json.done]);

      const out = text.stdout() + text.stderr();
      expect(textCode, out).toBe(0);
      expect(out).not.toMatch(/fault/i);
      expect(text.stdout()).toMatch(/^version \d+: pruned while verifying \(not checked\)$/m);
      expect(text.stdout()).toMatch(/^verified \d+ version\(s\): all ok; \d+ pruned by the writer meanwhile, not checked/m);

      expect(jsonCode, json.stdout() + json.stderr()).toBe(0);
      jsonOut = json.stdout();
      const r = JSON.parse(jsonOut) as { ok: boolean; reports: Array<{ ok: boolean; version: number }>; pruned: number[] };
      expect(r.ok).toBe(true);
      expect(r.reports.every((x) => x.ok)).toBe(true);
    } finally {
      writer.p.stdin.end("stop\n");
      await writer.done;
    }
    // Every version of the first 30 still kept was checked (the JSON run may have listed the versions before the
    // prune or after it, as the two cores let it start): none was skipped or taken for pruned.
    const reader = Tree.openReadOnly(dir);
    const kept = reader.versions().filter((v) => v <= 30);
    reader.close();
    const r = JSON.parse(jsonOut) as { reports: Array<{ version: number }>; pruned: number[] };
    const checked = new Set(r.reports.map((x) => x.version));
    expect(kept.filter((v) => !checked.has(v))).toEqual([]);
  }, 60_000);
});
