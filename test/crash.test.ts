import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { toHex, Tree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { applyVersion } from "./fixtures/version-ops.js";

const child = fileURLToPath(new URL("./fixtures/crash-writer.ts", import.meta.url));

/** Runs the writer until it has committed past `minVersion`, then kills it after `delayMs`; returns the last "committed" line. */
function runAndKill(dir: string, minVersion: number, delayMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ["--import", "tsx", child, dir], { stdio: ["ignore", "pipe", "pipe"] });
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
        if (!armed && (last >= minVersion || /^opened/.test(line))) {
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

describe("crash safety (SIGKILL)", () => {
  it("reopens after every kill at a version no older than the last returned commit, with every version intact", async () => {
    const dir = tempDir();
    const model = Tree.memory();
    const hashes: string[] = [""];
    const expectUpTo = (v: number): void => {
      while (model.version < v) {
        applyVersion(model, model.version + 1);
        hashes.push(toHex(model.commit().hash));
      }
    };
    let seed = 12345;
    const rand = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let kill = 0; kill < 22; kill++) {
      // Kill delays from 0 to ~250 ms land before, during and between commits (each takes a few ms to tens of ms).
      const last = await runAndKill(dir, 0, Math.floor(rand() * 250));
      const t = Tree.open(dir);
      expect(t.version).toBeGreaterThanOrEqual(last);
      expectUpTo(t.version);
      expect(toHex(t.hash)).toBe(hashes[t.version]);
      // Every earlier version still reads: its hash, and a value that changed in it.
      for (let v = 1; v <= t.version; v += Math.max(1, Math.floor(t.version / 10))) {
        expect(toHex(t.at(v).hash)).toBe(hashes[v]);
      }
      t.close();
    }
    // The kills happened across many versions, not all at the start.
    expect(model.version).toBeGreaterThan(10);
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
