import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { toHex, Tree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { applyVersion } from "./fixtures/version-ops.js";

const child = fileURLToPath(new URL("./fixtures/prune-child.ts", import.meta.url));

function killDuringPrune(dir: string, upTo: number, delayMs: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ["--import", "tsx", child, dir, String(upTo)], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("pruning\n") && !p.killed) setTimeout(() => p.kill("SIGKILL"), delayMs);
    });
    p.stderr.on("data", (d: Buffer) => (err += d.toString()));
    p.on("exit", (_c, signal) => (signal === "SIGKILL" ? resolve(out.includes("pruned")) : reject(new Error(err))));
  });
}

describe("SIGKILL during a prune", () => {
  it("reopens with every kept version intact, and the prune can be run again", async () => {
    const dir = tempDir();
    const model = Tree.memory();
    const hashes = [""];
    const extend = (v: number): void => {
      while (model.version < v) {
        applyVersion(model, model.version + 1);
        hashes.push(toHex(model.commit().hash));
      }
    };
    const t = Tree.open(dir, { checkpointInterval: 5, shardSize: 10 });
    for (let v = 1; v <= 120; v++) {
      applyVersion(t, v);
      t.commit();
    }
    t.close();
    let target = 60;
    const delays = [30, 150, 400, 800, 1200, 2000];
    for (const delay of delays) {
      await killDuringPrune(dir, target, delay);
      const r = Tree.open(dir);
      extend(r.version);
      const kept = r.versions();
      // Everything after the prune target survives, whatever the moment of the kill.
      for (let v = target + 1; v <= r.version; v++) expect(kept).toContain(v);
      for (const v of kept) expect(toHex(r.at(v).hash)).toBe(hashes[v]);
      // Reads of the oldest kept version still match the model.
      const oldest = kept[0]!;
      const got = [...r.at(oldest).iterate()].slice(0, 200).map(([k, x]) => toHex(k) + toHex(x));
      expect(got).toEqual([...model.at(oldest).iterate()].slice(0, 200).map(([k, x]) => toHex(k) + toHex(x)));
      // The interrupted prune runs again to completion.
      await r.prune(target);
      expect(r.versions()[0]).toBe(target + 1);
      for (const v of [target + 1, r.version]) expect(toHex(r.at(v).hash)).toBe(hashes[v]);
      r.close();
      target += 15;
    }
  }, 240_000);
});
