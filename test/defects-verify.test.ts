/**
 * A stored node hash that no longer matches its node is found: by `iavlite verify` (which must check every stored
 * hash, not only rehash keys and values up to the root), and, for the root, already when the store is opened.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { IavlError, Tree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { b, corruptStoredNodeHash, type StoredNodeKind } from "./helpers.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const main = join(root, "src/cli/main.ts");

/** Runs `iavlite args…` as a child process; resolves with its exit status and output. */
function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", main, ...args], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
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
});
