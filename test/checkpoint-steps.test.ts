/**
 * Checkpoints written over several commits (src/checkpoint/checkpoint-steps.ts): the version becomes a checkpoint
 * only when its last rows land, every hash stays exact meanwhile, a kill between two steps leaves a store whose
 * unfinished rows the next writer removes, and pruning then leaves exactly the rows the kept trees hold.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { toHex, Tree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { applyVersion } from "./fixtures/version-ops.js";
import { branchRowsProblem, leafRowsProblem, inStoreFile } from "./helpers.js";
import { node } from "./processes.js";
import { PAGE_LEAVES } from "../src/sqlite/shards.js";
import type { NodeTable } from "../src/tree/node-table.js";

/** As the fixture writer opens its store: ~29,000 keys after version 1, past what 8 MiB keeps resident. */
// Each version in SQLite when commit() returns: the tests read the file's rows after each commit.
const OPTIONS = { checkpointInterval: 20, memoryBudgetMiB: 8, commitJournal: false } as const;
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
  return inStoreFile(dir, (db) => {
    const last = db.prepare("SELECT coalesce(max(version), 0) FROM versions WHERE checkpoint = 1").pluck().get() as number;
    const unfinished = db.prepare("SELECT max(version) FROM pages WHERE version > ?").pluck().get(last) as number | null;
    return { last, unfinished: unfinished ?? undefined };
  });
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
    const flagOf = (v: number): number | undefined =>
      inStoreFile(dir, (db) => db.prepare("SELECT checkpoint FROM versions WHERE version = ?").pluck().get(v) as number | undefined);
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

  // After three steps, the checkpoint had moved clean pages of the base's tree into its own, and the versions since
  // recorded those when they replaced them: with them gone, nothing recorded the base's pages, and one stayed for good.
  it.each([
    ["after its first step", 0],
    ["after its third step", 2],
  ])("killed %s: the next writer removes the unfinished rows and carries on with exact hashes, and pruning leaves no row behind", async (_, more) => {
    const dir = tempDir();
    const child = node([fileURLToPath(new URL("./fixtures/checkpoint-steps-writer.ts", import.meta.url)), dir, String(more)]);
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

/** The parts of a store's writer this test looks into. */
interface WriterInternals {
  backend: { set: { live: { root: number }; src: { t: NodeTable }; checkpoints: { held: number; pending: number | undefined } } };
}

describe("pages written ahead of a checkpoint's walk", () => {
  it("holds about the walked tree's spine and page roots, not the nodes of every page later versions changed", () => {
    const dir = tempDir();
    const t = Tree.open(dir, { checkpointInterval: 40, memoryBudgetMiB: 64 });
    const set = (t as unknown as WriterInternals).backend.set;
    // 30,000 keys: ~3,800 rows, so that the walk's steps of 256 rows go on over most of its 20 commits.
    const key = (i: number): Uint8Array => new TextEncoder().encode(`key-${(i * 7919) % 30_000}`.padEnd(12, "."));
    for (let v = 1; v <= 40; v++) {
      for (let i = 0; i < (v === 1 ? 30_000 : 20); i++) t.set(key(v === 1 ? i : v * 31 + i), Uint8Array.of(v, i & 0xff));
      t.commit();
    }
    expect(set.checkpoints.pending).toBe(40);
    // The walked tree's spine nodes and page roots: what the walk may hold once every changed page is written ahead.
    const tbl = set.src.t;
    let spineAndRoots = 0;
    const stack = [set.live.root];
    while (stack.length > 0) {
      const n = stack.pop()!;
      spineAndRoots++;
      if (tbl.size(n) > PAGE_LEAVES) stack.push(tbl.left(n), tbl.right(n));
    }
    // Changes that reach most pages before the walk ends: held whole, their nodes would be most of the tree's 60,000.
    const changes = 200;
    let [most, commits] = [0, 0];
    for (let v = 41; set.checkpoints.pending === 40; v++, commits++) {
      for (let i = 0; i < changes; i++) t.set(key(v * 997 + i * 149), Uint8Array.of(v));
      t.commit();
      most = Math.max(most, set.checkpoints.held);
    }
    expect(commits).toBeGreaterThan(10);
    // A commit's own replaced nodes wait one commit for their pages: at most a path (~19 nodes here) a change.
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(spineAndRoots + changes * 19);
    t.close();
    const again = Tree.open(dir);
    expect(again.at(again.version).audit()).toMatchObject({ ok: true, faults: [] });
    again.close();
  }, 120_000);
});

describe("the first checkpoint after a reopen", () => {
  it("spreads its rows as the checkpoint before it did, not its most in its last step", () => {
    const dir = tempDir();
    // Inline commits: the pages a version wrote are read from the file once its commit() returns.
    const options = { checkpointInterval: 40, memoryBudgetMiB: 64, commitJournal: false };
    // 60,000 keys: ~5,500 pages, more than the 20 steps of the fewest rows (256) would write before the last.
    const key = (i: number): Uint8Array => new TextEncoder().encode(`key-${(i * 7919) % 60_000}`.padEnd(12, "."));
    const commit = (t: Tree, v: number): void => {
      for (let i = 0; i < (v === 1 ? 60_000 : 400); i++) t.set(key(v === 1 ? i : v * 997 + i * 149), Uint8Array.of(v, i & 0xff));
      t.commit();
    };
    let t = Tree.open(dir, options);
    for (let v = 1; v <= 70; v++) commit(t, v);
    t.close(); // a checkpoint of 70 too, in one piece
    t = Tree.open(dir, options);
    const pagesOf = (v: number): number =>
      inStoreFile(dir, (db) => db.prepare("SELECT count(*) FROM pages WHERE version = ?").pluck().get(v) as number);
    const written: number[] = [];
    for (let v = 71; v <= 130; v++) {
      commit(t, v);
      written.push(pagesOf(110));
    }
    t.close();
    const steps = written.map((n, i) => n - (written[i - 1] ?? 0)).filter((n) => n > 0);
    const total = written[written.length - 1]!;
    expect(total).toBeGreaterThan(4_000);
    expect(steps.length).toBeGreaterThan(5);
    // Before: 19 steps of 256 rows, then the rest (over half the pages) in one commit.
    expect(Math.max(...steps)).toBeLessThan(total / 4);
  }, 120_000);
});

describe("a checkpoint eviction asks for", () => {
  it("ends in its own commit when what stays is over the budget", () => {
    // At 8 MiB (~42,000 nodes) the spine and page roots of ~177,000 keys take ~32,000, so each version's dirty pages
    // keep memory over the budget: the checkpoint that frees them must not wait for later commits.
    const big = (tree: Tree, v: number): void => applyVersion(tree, v, v === 1 ? 300_000 : 1_000, 600_000);
    const model = Tree.memory();
    const dir = tempDir();
    const t = Tree.open(dir, OPTIONS);
    let checkpoints = 0;
    for (let v = 1; v <= 8; v++) {
      big(model, v);
      big(t, v);
      expect(toHex(t.commit().hash)).toBe(toHex(model.commit().hash));
      const s = fileState(dir);
      expect(s.unfinished).toBeUndefined();
      if (s.last === v) checkpoints++;
    }
    expect(checkpoints).toBeGreaterThan(3);
    t.close();
  }, 120_000);
});
