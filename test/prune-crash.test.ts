import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, inject, it } from "vitest";
import { toHex, Tree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { branchRowsProblem, leafRowsProblem } from "./helpers.js";
import { applyVersion } from "./fixtures/version-ops.js";
import { node } from "./processes.js";

const child = fileURLToPath(new URL("./fixtures/prune-child.ts", import.meta.url));
const main = inject("cli");

/** Where a killed child was: the latest version before its prune, the last commit it saw return, and its prune's state. */
interface Killed {
  latest: number;
  last: number;
  /** "holding K <phase>": stopped after its K-th progress report; "pruned": the prune had ended; "unreported": neither. */
  state: string;
}

/**
 * Runs the child: it prunes every version ≤ `upTo` while it commits, and is killed (SIGKILL) with the prune stopped
 * right after its first progress report of phase `holdAt` (the child holds the write lock from there), or at once
 * when `holdAt` is undefined, before the prune could do more than perhaps its first step.
 */
async function killDuringPrune(dir: string, upTo: number, holdAt: string | undefined): Promise<Killed> {
  const p = node([child, dir, String(upTo), holdAt ?? "(none)"]);
  const latest = Number((await p.line(/^latest (\d+)$/))[1]);
  const state = holdAt === undefined ? "unreported" : (await p.line(/^(holding \d+ .*|pruned)$/))[1]!;
  p.p.kill("SIGKILL");
  const { signal } = await p.exited;
  if (signal !== "SIGKILL") throw new Error(`the child exited on its own: ${p.stderr}`);
  return { latest, last: Math.max(latest, ...p.numbers(/^committed (\d+)$/)), state };
}

describe("SIGKILL during a prune", () => {
  it("reopens with every kept version intact, and the prune run again removes exactly what it should", async () => {
    const dir = tempDir();
    const model = Tree.memory();
    const hashes = [""];
    const extend = (v: number): void => {
      while (model.version < v) {
        applyVersion(model, model.version + 1);
        hashes.push(toHex(model.commit().hash));
      }
    };
    const entries = (t: ReturnType<Tree["at"]>): string[] => [...t.iterate()].map(([k, x]) => toHex(k) + toHex(x));
    const t = Tree.open(dir, { checkpointInterval: 5, shardSize: 10 });
    for (let v = 1; v <= 120; v++) {
      applyVersion(t, v);
      t.commit();
    }
    t.close();
    // Each prune is stopped at a step it reported: before any, and after each phase in turn. Each prunes 20 versions
    // or more, so that its values take two steps (16 versions a step) and every phase named here is reported.
    const rounds: Array<[target: number, holdAt: string | undefined]> = [
      [60, undefined],
      [80, "versions"],
      [100, "values"],
      [120, "branches"],
      [140, "shards"],
      [160, "done"],
    ];
    for (const [target, holdAt] of rounds) {
      const killed = await killDuringPrune(dir, target, holdAt);
      if (holdAt !== undefined) expect(killed.state, "the prune reported the phase before it ended").toMatch(new RegExp(`^holding \\d+ ${holdAt}`));
      const r = Tree.open(dir);
      expect(killed.latest).toBeGreaterThanOrEqual(target + 10);
      expect(r.version).toBeGreaterThanOrEqual(killed.last);
      extend(r.version);
      const kept = r.versions();
      // Once the prune reported progress, its first step (removing the versions) has committed.
      if (holdAt !== undefined) expect(kept[0]).toBe(target + 1);
      else expect(kept[0]).toBeLessThanOrEqual(target + 1);
      // Everything after the prune target survives, whatever the moment of the kill.
      for (let v = target + 1; v <= r.version; v++) expect(kept).toContain(v);
      for (const v of kept) expect(toHex(r.at(v).hash), `version ${v}`).toBe(hashes[v]);
      // Reads of the oldest kept version match the model.
      expect(entries(r.at(kept[0]!))).toEqual(entries(model.at(kept[0]!)));
      // The interrupted prune runs again to completion, and leaves the rows the kept versions need, no more.
      expect((await r.prune(target)).keptFrom).toBe(target + 1);
      expect(r.versions()).toEqual(kept.filter((v) => v > target));
      for (const v of [target + 1, r.version]) expect(entries(r.at(v))).toEqual(entries(model.at(v)));
      for (const v of r.versions()) expect(toHex(r.at(v).hash), `version ${v}`).toBe(hashes[v]);
      r.close();
      expect(branchRowsProblem(dir)).toBeUndefined();
      expect(leafRowsProblem(dir)).toBeUndefined();
    }
    // A safety net: nothing here waits on the clock (a busy machine makes each child and prune thread slow to start).
  }, 600_000);

  it("iavlite prune with no version left to remove still finishes a prune a kill cut short", async () => {
    // Killed after its first step: versions ≤ 40 are gone, the rows they leave are not. The kill comes once the child
    // hears of that step, and on a busy machine the prune thread may have finished meanwhile: a store whose prune was
    // not cut short proves nothing here, so another is made, a few times at most.
    let dir = "";
    for (let round = 0; round < 5 && (dir === "" || leafRowsProblem(dir) === undefined); round++) {
      dir = tempDir();
      const t = Tree.open(dir, { checkpointInterval: 5, shardSize: 10 });
      for (let v = 1; v <= 60; v++) {
        applyVersion(t, v);
        t.commit();
      }
      t.close();
      const killed = await killDuringPrune(dir, 40, "versions");
      expect(killed.state).toMatch(/^holding \d+ versions/);
    }
    expect(leafRowsProblem(dir), "no kill in five cut the prune short").toBeDefined();
    const kept = Tree.openReadOnly(dir);
    const versions = kept.versions();
    kept.close();
    expect(versions[0]).toBe(41);
    // Keeping more versions than there are: no version to remove.
    const r = spawnSync(process.execPath, [main, "prune", dir, "--keep-recent", String(versions.length + 5)], { encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^nothing to prune: \d+ version\(s\) kept, \d+ asked; reclaimed .* that earlier prunes left/);
    expect(leafRowsProblem(dir)).toBeUndefined();
    expect(branchRowsProblem(dir)).toBeUndefined();
    const after = Tree.openReadOnly(dir);
    expect(after.versions()).toEqual(versions);
    after.close();
  }, 600_000);
});
