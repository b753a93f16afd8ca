/**
 * A full disk (here: a file-size limit, `ulimit -f`) gives a coded IavlError from commit(), leaves the tree at its
 * last committed version, and the store reopens whole.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { iavlSpec, verifyMembership } from "@confio/ics23";
import { describe, expect, it } from "vitest";
import { MultiTree, toHex, Tree, type ErrorCode } from "../src/index.js";
import { tempDir } from "./backends.js";
import { b } from "./helpers.js";
import { scriptArgs } from "../sim/child-command.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const child = fileURLToPath(new URL("./fixtures/disk-full-writer.ts", import.meta.url));
const multiChild = fileURLToPath(new URL("./fixtures/disk-full-multi.ts", import.meta.url));

interface Failure {
  name: string;
  code: string | undefined;
  message: string;
}
interface Report {
  first?: Failure;
  second?: Failure;
  lastVersion: number;
  lastHash: string;
  treeVersion: number | string;
}

/** Runs a writer child with every file it writes limited to `blocks` KiB (SIGXFSZ ignored: writes just fail). */
function runLimited<R = Report>(dir: string, blocks: number, script = child): Promise<R> {
  return new Promise((resolve, reject) => {
    const command = `ulimit -f ${blocks}; trap "" XFSZ; exec "${process.execPath}" ${scriptArgs(script).map((a) => `"${a}"`).join(" ")} "${dir}"`;
    const p = spawn("bash", ["-c", command], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d: Buffer) => (out += d.toString()));
    p.stderr.on("data", (d: Buffer) => (err += d.toString()));
    p.on("exit", (code, signal) => {
      const line = out.trim().split("\n").pop() ?? "";
      try {
        resolve(JSON.parse(line) as R);
      } catch {
        reject(new Error(`the writer child ended (${code ?? signal}) without a report: ${out}${err}`));
      }
    });
  });
}

/** The codes of a write the disk refused (new codes: not yet in ErrorCode). */
const DISK_CODES: ErrorCode[] = ["IO_ERROR", "DISK_FULL"];

describe("a full disk gives a coded error", () => {
  it("commit() past a 512 KiB file-size limit throws IavlError IO_ERROR/DISK_FULL, twice, and the tree stays at its last version", async () => {
    const dir = join(tempDir(), "store");
    const r = await runLimited(dir, 512);
    // The store got a few versions in before the limit.
    expect(r.lastVersion).toBeGreaterThanOrEqual(2);
    expect(r.first, "commit() must fail once the limit is reached").toBeDefined();
    expect({ name: r.first!.name, code: r.first!.code }, r.first!.message).toEqual({ name: "IavlError", code: expect.toBeOneOf(DISK_CODES) });
    // Trying again gives the same kind of error, not CORRUPT and not a raw SqliteError.
    expect(r.second, "the second commit must fail too").toBeDefined();
    expect({ name: r.second!.name, code: r.second!.code }, r.second!.message).toEqual({ name: "IavlError", code: expect.toBeOneOf(DISK_CODES) });
    expect(r.treeVersion).toBe(r.lastVersion);

    // Without the limit the store opens at the last committed version, whole, and goes on.
    const t = Tree.open(dir);
    expect(t.version).toBe(r.lastVersion);
    expect(toHex(t.hash)).toBe(r.lastHash);
    const key = b(`key-${r.lastVersion}-3`);
    const value = t.get(key)!;
    expect(value?.length).toBe(4096);
    expect(verifyMembership(t.proof(key), iavlSpec, t.hash, key, value)).toBe(true);
    t.set(b("after"), b("the disk was full"));
    expect(t.commit().version).toBe(r.lastVersion + 1);
    t.close();
    const again = Tree.open(dir);
    expect(again.version).toBe(r.lastVersion + 1);
    expect(again.get(b("after"))).toEqual(b("the disk was full"));
    again.close();
  }, 30_000);

  it("a MultiTree goes on as a Tree does: every failure says what was stored, no CORRUPT, and a reopen agrees", async () => {
    const dir = join(tempDir(), "multi");
    const r = await runLimited<{
      failures: Array<{ code: string; message: string }>;
      last: number;
      lastAppHash: string;
      version: number | string;
      big: number | string;
      acct: number | string;
      pending: number | string;
    }>(dir, 512, multiChild);
    expect(r.last).toBeGreaterThanOrEqual(2);
    expect(r.failures.length, JSON.stringify(r.failures)).toBeGreaterThanOrEqual(1);
    for (const f of r.failures) {
      expect(f.code, f.message).toBeOneOf(DISK_CODES);
      // Each says which version it is about and what every store holds.
      expect(f.message, f.message).toMatch(/version \d+/);
    }
    // The handle still answers, and every store is where the multi-store says it is.
    expect([r.version, r.big, r.acct]).toEqual([r.last, r.last, r.last]);
    expect(r.pending).toBe(1);

    // Without the limit the folder opens at the version commit() last returned, with its app hash, and goes on.
    const m = MultiTree.open(dir, { stores: ["big", "acct"] });
    expect(m.version).toBe(r.last);
    expect(toHex(m.appHash)).toBe(r.lastAppHash);
    m.tree("acct").set(b("after"), b("the disk was full"));
    expect(m.commit().version).toBe(r.last + 1);
    m.close();
  }, 60_000);
});
