import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { EMPTY_HASH, toHex, Tree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { applyVersion } from "./fixtures/version-ops.js";

const child = fileURLToPath(new URL("./fixtures/crash-writer.ts", import.meta.url));

/** Runs the writer until it has committed past `minVersion`, then kills it after `delayMs`; returns the last "committed" line. */
function runAndKill(dir: string, durability: string, delayMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ["--import", "tsx", child, dir, durability], { stdio: ["ignore", "pipe", "pipe"] });
    let last = 0;
    let buf = "";
    let err = "";
    let armed = false;
    p.stdout.on("data", (d: Buffer) => {
      buf += d.toString();
      let i: number;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        const m = /^committed (\d+)$/.exec(line);
        if (m) last = Number(m[1]);
        if (!armed && /^opened/.test(line)) {
          armed = true;
          setTimeout(() => p.kill("SIGKILL"), delayMs);
        }
      }
    });
    p.stderr.on("data", (d: Buffer) => (err += d.toString()));
    p.on("exit", (_code, signal) => {
      if (signal !== "SIGKILL") reject(new Error(`writer exited on its own: ${err}`));
      else resolve(last);
    });
  });
}

describe.each([
  // "normal" loses nothing that commit() returned; "async" at most the queued tail (asyncQueue: 4 in the child).
  { durability: "normal", kills: 22, mayLose: 0, maxDelay: 250 },
  // The async writer's worker thread takes a moment to start under tsx, so kills come a little later.
  { durability: "async", kills: 10, mayLose: 4, maxDelay: 1500 },
])("crash safety (SIGKILL, durability $durability)", ({ durability, kills, mayLose, maxDelay }) => {
  it("reopens after every kill with no torn version, no older than allowed, every version intact", async () => {
    const dir = tempDir();
    const model = Tree.memory();
    const hashes: string[] = [toHex(EMPTY_HASH)];
    const expectUpTo = (v: number): void => {
      while (model.version < v) {
        applyVersion(model, model.version + 1);
        hashes.push(toHex(model.commit().hash));
      }
    };
    let seed = 12345;
    const rand = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let kill = 0; kill < kills; kill++) {
      // Kill delays from 0 to ~250 ms land before, during and between commits (each takes a few ms to tens of ms).
      const last = await runAndKill(dir, durability, Math.floor(rand() * maxDelay));
      const t = Tree.open(dir);
      expect(t.version).toBeGreaterThanOrEqual(last - mayLose);
      expectUpTo(t.version);
      expect(toHex(t.hash)).toBe(hashes[t.version]);
      // Every earlier version still reads: its hash, and a value that changed in it.
      for (let v = 1; v <= t.version; v += Math.max(1, Math.floor(t.version / 10))) {
        expect(toHex(t.at(v).hash)).toBe(hashes[v]);
      }
      t.close();
    }
    // The kills happened across many versions, not all at the start.
    expect(model.version).toBeGreaterThan(kills / 2);
    // Full check of reads at the end: every version's contents equal the model's.
    const t = Tree.open(dir);
    for (let v = 1; v <= t.version; v += 3) {
      const got = [...t.at(v).iterate()].map(([k, x]) => toHex(k) + toHex(x));
      const want = [...model.at(v).iterate()].map(([k, x]) => toHex(k) + toHex(x));
      expect(got).toEqual(want);
    }
    t.close();
  }, 240_000);
});
