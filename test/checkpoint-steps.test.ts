/**
 * Checkpoints written over several commits (src/checkpoint/checkpoint-steps.ts): the version becomes a checkpoint
 * only when its last rows land, every hash stays exact meanwhile, a kill between two steps leaves a store whose
 * unfinished rows the next writer removes, and pruning then leaves exactly the rows the kept trees hold.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { toHex, Tree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { applyVersion } from "./fixtures/version-ops.js";
import { branchRowsProblem, leafRowsProblem } from "./helpers.js";
import { node } from "./processes.js";

/** As the fixture writer opens its store: ~29,000 keys after version 1, past what 8 MiB keeps resident. */
const OPTIONS = { checkpointInterval: 20, memoryBudgetMiB: 8 } as const;
const apply = (tree: Tree, v: number): void => applyVersion(tree, v, v === 1 ? 40_000 : 300, 60_000);

function modelHashes(upTo: number): { hashes: string[]; model: Tree } {
  const model = Tree.memory();
  const hashes = [""];
  for (let v = 1; v <= upTo; v++) {
    apply(model, v);
    hashes.push(toHex(model.commit().hash));
  }
  return { hashes, model };
}

/** Reads of the store file beside its writer: its newest checkpoint, and the checkpoint whose rows are unfinished. */
function fileState(dir: string): { last: number; unfinished: number | undefined } {
  const db = new Database(join(dir, "iavl.sqlite"), { readonly: true });
  try {
    const last = db.prepare("SELECT coalesce(max(version), 0) FROM versions WHERE checkpoint = 1").pluck().get() as number;
    const unfinished = db.prepare("SELECT max(version) FROM pages WHERE version > ?").pluck().get(last) as number | null;
    return { last, unfinished: unfinished ?? undefined };
  } finally {
    db.close();
  }
}

describe("a checkpoint written over several commits", () => {
  it("marks its version only with its last rows, keeps every hash exact, and leaves only kept trees' rows after prunes", async () => {
    const { hashes, model } = modelHashes(80);
    const dir = tempDir();
    const t = Tree.open(dir, OPTIONS);
    const states = [fileState(dir)];
    for (let v = 1; v <= 80; v++) {
      apply(t, v);
      expect(toHex(t.commit().hash)).toBe(hashes[v]);
      states.push(fileState(dir));
    }
    // Some checkpoint began with its own version's commit and ended some commits later, and only then did its version
    // become the newest checkpoint.
    const began = states.findIndex((s, v) => s.unfinished === v && s.last < v);
    expect(began).toBeGreaterThan(0);
    const ended = states.findIndex((s) => s.last === began);
    expect(ended).toBeGreaterThan(began);
    for (let v = began; v < ended; v++) expect(states[v]).toMatchObject({ last: states[began]!.last, unfinished: began });
    expect(states[ended]!.unfinished).toBeUndefined();
    await t.prune(70);
    t.close();
    expect(branchRowsProblem(dir)).toBeUndefined();
    expect(leafRowsProblem(dir)).toBeUndefined();
    const again = Tree.open(dir);
    for (const v of [71, 75, 80]) {
      const view = again.at(v);
      expect(toHex(view.hash)).toBe(hashes[v]);
      expect([...view.iterate()].length).toBe([...model.at(v).iterate()].length);
    }
    expect(again.at(80).audit()).toMatchObject({ ok: true, faults: [] });
    again.close();
  }, 240_000);

  it("ends a keepEvery snapshot's checkpoint in the snapshot's own commit: a kill before a later step would lose it for good", () => {
    const dir = tempDir();
    const t = Tree.open(dir, { ...OPTIONS, checkpointInterval: 8, keepRecent: 17, keepEvery: 12 });
    const flagOf = (v: number): number | undefined => {
      const db = new Database(join(dir, "iavl.sqlite"), { readonly: true });
      try {
        return db.prepare("SELECT checkpoint FROM versions WHERE version = ?").pluck().get(v) as number | undefined;
      } finally {
        db.close();
      }
    };
    const spread: number[] = [];
    for (let v = 1; v <= 36; v++) {
      apply(t, v);
      t.commit();
      if (v % 12 === 0) expect(flagOf(v), `snapshot version ${v}`).toBe(1);
      else if (fileState(dir).unfinished === v) spread.push(v);
    }
    // Other checkpoints of the same tree were spread, so the snapshots' were not whole by chance.
    expect(spread.length).toBeGreaterThan(0);
    t.close();
  }, 240_000);

  it("killed between two steps: the next writer removes the unfinished rows and carries on with exact hashes", async () => {
    const dir = tempDir();
    const child = node([fileURLToPath(new URL("./fixtures/checkpoint-steps-writer.ts", import.meta.url)), dir]);
    const at = Number((await child.line(/^unfinished (\d+)$/))[1]);
    child.p.kill("SIGKILL");
    expect((await child.exited).signal).toBe("SIGKILL");
    expect(fileState(dir).unfinished).toBeDefined();

    const { hashes, model } = modelHashes(at + 45);
    const t = Tree.open(dir, OPTIONS);
    expect(t.version).toBe(at);
    expect(toHex(t.hash)).toBe(hashes[at]);
    expect(fileState(dir).unfinished).toBeUndefined();
    for (let v = at + 1; v <= at + 45; v++) {
      apply(t, v);
      expect(toHex(t.commit().hash)).toBe(hashes[v]);
    }
    await t.prune(at + 35);
    t.close();
    expect(branchRowsProblem(dir)).toBeUndefined();
    expect(leafRowsProblem(dir)).toBeUndefined();
    const again = Tree.open(dir);
    const last = again.at(at + 45);
    expect(toHex(last.hash)).toBe(hashes[at + 45]);
    expect([...last.iterate()].length).toBe([...model.at(at + 45).iterate()].length);
    expect(last.audit()).toMatchObject({ ok: true, faults: [] });
    again.close();
  }, 240_000);
});
