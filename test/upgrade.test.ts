/**
 * The in-place upgrade of a layout-1 store (test/fixtures/layout1/) to layout 2: every kept version's hash, reads,
 * proofs and refusals intact, commits continuing with the right hashes, and a SIGKILL during the upgrade leaving a
 * store that upgrades on the next open. And a layout-2 store's upgrade to recorded orphans (migration 003), pruned,
 * and to pages (migration 006): whole, resumed after a SIGKILL between its transactions, its pages pruned by record.
 */
import { spawn } from "node:child_process";
import { copyFileSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { iavlSpec, verifyMembership, verifyNonMembership } from "@confio/ics23";
import { describe, expect, it } from "vitest";
import { IavlError, toHex, Tree, type ReadonlyTree } from "../src/index.js";
import { decodePage, pageHash } from "../src/sqlite/page-codec.js";
import { tempDir } from "./backends.js";
import { branchRows, inStoreFile } from "./helpers.js";
import { scriptArgs } from "../sim/child-command.js";
import { applyVersion } from "./fixtures/version-ops.js";
import { applyHistory, LAST, OPTIONS, PRUNES } from "./fixtures/layout1-history.js";
import { LAYOUT2_KEYS, LAYOUT2_OPS, LAYOUT2_OPTIONS } from "./fixtures/layout2-history.js";

/** The schema an upgrade reaches: the last migration of migrations/. */
const SCHEMA = 7;
const FIXTURE = fileURLToPath(new URL("./fixtures/layout1/iavl.sqlite.layout1", import.meta.url));
const LAYOUT2_FIXTURE = fileURLToPath(new URL("./fixtures/layout2/iavl.sqlite.layout2", import.meta.url));
const KEPT = [20, 40, ...Array.from({ length: LAST - 44 }, (_, i) => 45 + i)];
const enc = new TextEncoder();
const KEYS = [
  ...Array.from({ length: 80 }, (_, i) => enc.encode(`k${i}`)),
  ...[0, 1, 2, 3].map((i) => enc.encode(`empty${i}`)),
  enc.encode(`tmp${LAST}`),
  enc.encode("zzz"),
];

/** A copy of the fixture in a fresh folder, as a store. */
function fixtureStore(): string {
  const dir = tempDir();
  copyFileSync(FIXTURE, join(dir, "iavl.sqlite"));
  return dir;
}

function schemaOf(dir: string): number {
  return inStoreFile(dir, (db) => db.prepare("SELECT max(id) FROM schema_migrations").pluck().get() as number);
}

/** What migration 006 leaves to do in the store: branch rows of at most 16 leaves, and its mark; and the pages. */
function pagesState(dir: string): { small: number; marked: boolean; pages: number; bare: number } {
  return inStoreFile(dir, (db) => {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'branch\\_%' ESCAPE '\\'").pluck().all() as string[];
    const small = tables.reduce((n, t) => n + (db.prepare(`SELECT count(*) FROM ${t} WHERE size <= 16`).pluck().get() as number), 0);
    const marked = db.prepare("SELECT 1 FROM meta WHERE name = 'pages_upgrade'").get() !== undefined;
    const paged = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'pages'").get() !== undefined;
    // Branch tables without migration 007's kids column.
    const bare = tables.filter((t) => !(db.prepare("SELECT name FROM pragma_table_info(?)").pluck().all(t) as string[]).includes("kids")).length;
    return { small, marked, pages: paged ? (db.prepare("SELECT count(*) FROM pages").pluck().get() as number) : 0, bare };
  });
}

/** The fixture's history in a memory tree, versions 1..upTo. */
function model(upTo: number): Tree {
  const m = Tree.memory();
  for (let v = 1; v <= upTo; v++) {
    applyHistory(m, v);
    m.commit();
  }
  return m;
}

/** Every read of `view` equals `expected`'s: hash, size, each key, the whole iteration, proofs that verify. */
function expectSameVersion(view: ReadonlyTree, expected: ReadonlyTree): void {
  const v = view.version;
  expect(toHex(view.hash), `hash of ${v}`).toBe(toHex(expected.hash));
  expect(view.size, `size of ${v}`).toBe(expected.size);
  for (const k of KEYS) {
    const want = expected.get(k);
    expect(view.get(k), `get of ${v}`).toEqual(want);
    let unprovable: string | undefined;
    try {
      expected.proof(k);
    } catch (e) {
      unprovable = (e as IavlError).code;
    }
    // ICS23 cannot prove an empty value, nor an absence next to one: both trees must refuse alike.
    if (unprovable !== undefined) expect(() => view.proof(k)).toThrow(expect.objectContaining({ code: unprovable }));
    else if (want === undefined) expect(verifyNonMembership(view.proof(k), iavlSpec, view.hash, k), `absence proof at ${v}`).toBe(true);
    else expect(verifyMembership(view.proof(k), iavlSpec, view.hash, k, want), `proof at ${v}`).toBe(true);
  }
  expect([...view.iterate()]).toEqual([...expected.iterate()]);
  const audit = view.audit();
  expect(audit.faults, `audit of ${v}`).toEqual([]);
}

describe("upgrading a layout-1 store in place", () => {
  it("keeps every kept version's hash, reads, proofs and refusals, and continues with the right hashes", async () => {
    const dir = fixtureStore();
    expect(schemaOf(dir)).toBe(1);
    // A reader cannot upgrade: it says so instead of reading a store it does not understand.
    expect(() => Tree.openReadOnly(dir)).toThrow(expect.objectContaining({ code: "SCHEMA_TOO_OLD" }));

    const tree = Tree.open(dir, OPTIONS);
    expect(schemaOf(dir)).toBe(SCHEMA);
    expect(pagesState(dir)).toMatchObject({ small: 0, marked: false, bare: 0 });
    const m = model(LAST);
    expect(tree.version).toBe(LAST);
    expect(tree.versions()).toEqual(KEPT);
    for (const v of KEPT) expectSameVersion(tree.at(v), m.at(v));
    for (const v of [1, 19, 21, 39, 44]) expect(() => tree.at(v)).toThrow(expect.objectContaining({ code: "VERSION_PRUNED" }));
    expect(() => tree.at(LAST + 1)).toThrow(expect.objectContaining({ code: "VERSION_NOT_FOUND" }));
    // The changes of the versions whose whole log the upgrade found are read from its rows; a snapshot whose log
    // layout 1 had compacted away (20) has none.
    const changes = (t: Tree, from: number, to: number): string[] => [...t.changes(from, to)].map((c) => `${c.version} ${toHex(c.key)} ${c.value === null ? "-" : toHex(c.value)}`);
    expect(changes(tree, 45, LAST)).toEqual(changes(m, 45, LAST));
    expect(changes(tree, 40, 40)).toEqual(changes(m, 40, 40));
    expect(() => changes(tree, 20, 20)).toThrow(expect.objectContaining({ code: "VERSION_PRUNED" }));

    // Commits go on from the upgraded store with cosmos/iavl's hashes (the model's).
    for (let v = LAST + 1; v <= LAST + 15; v++) {
      applyHistory(tree, v);
      applyHistory(m, v);
      expect(toHex(tree.commit().hash), `version ${v}`).toBe(toHex(m.commit().hash));
    }
    // And pruning works on what the upgrade wrote: the fixture's snapshots stay.
    await tree.prune(LAST + 5, { keepEvery: PRUNES[0]!.keepEvery });
    tree.close();

    const again = Tree.open(dir, OPTIONS);
    expect(again.versions()).toEqual([20, 40, 60, ...Array.from({ length: 10 }, (_, i) => LAST + 6 + i)]);
    for (const v of again.versions()) expectSameVersion(again.at(v), m.at(v));
    again.close();
    const reader = Tree.openReadOnly(dir);
    expectSameVersion(reader, m.at(LAST + 15));
    reader.close();
  }, 60_000);

  it("a SIGKILL during the upgrade leaves a store that upgrades on the next open", async () => {
    const child = fileURLToPath(new URL("./fixtures/open-store.ts", import.meta.url));
    const m = model(LAST);
    const delays = [0, 10, 25, 50, 90, 150];
    const outcomes = new Set<number>();
    for (const delay of delays) {
      const dir = fixtureStore();
      const p = spawn(process.execPath, [...scriptArgs(child), dir], { stdio: ["ignore", "pipe", "inherit"] });
      const exited = new Promise((r) => p.once("exit", r));
      // Killed a little after it starts opening (it prints a line right before Tree.open), or after it finished.
      await new Promise<void>((resolve) => p.stdout.once("data", () => resolve()));
      await new Promise((r) => setTimeout(r, delay));
      p.kill("SIGKILL");
      await exited;
      outcomes.add(schemaOf(dir));
      const tree = Tree.open(dir, OPTIONS);
      expect(schemaOf(dir)).toBe(SCHEMA);
      expect(tree.versions()).toEqual(KEPT);
      for (const v of [20, 40, 50, LAST]) expectSameVersion(tree.at(v), m.at(v));
      tree.close();
    }
    // Which schemas the kills left is the machine's timing; every one of them reopened whole.
    expect([...outcomes].every((s) => s >= 1 && s <= SCHEMA)).toBe(true);
  }, 120_000);
});

describe("the migrations' conversions are frozen", () => {
  // A conversion must write the layout of its migration forever: importing live store code (store-reader,
  // store-writer, version-ops, shards, meta, ...) would let a later change there silently change an old upgrade.
  const ALLOWED = ["src/sqlite/connection.ts", "src/base/hash.ts", "src/base/bytes.ts", "src/base/errors.ts"];
  const repo = fileURLToPath(new URL("..", import.meta.url));
  const folder = join(repo, "src", "sqlite", "migrations");

  it("import nothing from src/ but the connection type, hashing and bytes", () => {
    const modules = readdirSync(folder).filter((f) => f.endsWith(".ts"));
    expect(modules).toContain("002-layout2.ts");
    const offenders: string[] = [];
    for (const m of modules) {
      const file = join(folder, m);
      // Static imports and re-exports (`from "…"`), side-effect imports and dynamic `import("…")`.
      for (const [, spec] of readFileSync(file, "utf8").matchAll(/\b(?:from|import)\s*\(?\s*["']([^"']+)["']/g)) {
        if (!spec!.startsWith(".")) continue; // node: builtins and packages are not store code
        const target = relative(repo, resolve(dirname(file), spec!)).split("\\").join("/").replace(/\.js$/, ".ts");
        if (target.startsWith("src/") && !ALLOWED.includes(target)) offenders.push(`${m} imports ${target}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});

/** The layout-2 fixture's history in a memory tree, versions 1–100 (the fixture holds 1–43), and each one's hash. */
const layout2Model = (() => {
  let made: { m: Tree; hashes: string[] } | undefined;
  return (): { m: Tree; hashes: string[] } => {
    if (made !== undefined) return made;
    const m = Tree.memory();
    const hashes = [""];
    for (let v = 1; v <= 100; v++) {
      applyVersion(m, v, LAYOUT2_OPS, LAYOUT2_KEYS);
      hashes.push(toHex(m.commit().hash));
    }
    return (made = { m, hashes });
  };
})();

/**
 * Goes on from the layout-2 fixture's last version in `tree` (each hash the model's) to 100, prunes to 92 and closes
 * it: the rows and pages the store in `dir` keeps must then be exactly those its kept trees reach.
 */
async function continueAndPrune(tree: Tree, dir: string): Promise<void> {
  const { hashes } = layout2Model();
  for (let v = 44; v <= 100; v++) {
    applyVersion(tree, v, LAYOUT2_OPS, LAYOUT2_KEYS);
    expect(toHex(tree.commit().hash), `version ${v}`).toBe(hashes[v]);
  }
  await tree.prune(92);
  tree.close();
  const rows = branchRows(dir);
  expect(rows.stored).toEqual(rows.reached);
}

describe("upgrading a layout-2 store to recorded orphans (migration 003)", () => {
  it("drops the shards whose replaced branches were never recorded by copying their survivors, and deletes the rest by record", async () => {
    const dir = tempDir();
    const { hashes } = layout2Model();
    const options = LAYOUT2_OPTIONS;
    // Versions 1–43 as layout 2 wrote them (no pages), and as schema 2 left them: nothing recorded of the branches
    // their versions replaced.
    copyFileSync(LAYOUT2_FIXTURE, join(dir, "iavl.sqlite"));
    const db = new Database(join(dir, "iavl.sqlite"));
    db.exec("DROP TABLE orphaned_branches; DELETE FROM meta WHERE name IN ('orphans_from', 'branches_pruned_to'); DELETE FROM schema_migrations WHERE id >= 3");
    db.close();
    expect(schemaOf(dir)).toBe(2);

    const upgraded = Tree.open(dir, options);
    expect(schemaOf(dir)).toBe(SCHEMA);
    // The base (90) passes shards 0–4, which hold versions before the first recorded one (44), and 5–8, whose
    // replaced branches are all recorded.
    await continueAndPrune(upgraded, dir);
    const again = Tree.open(dir);
    expect(again.versions()).toEqual(Array.from({ length: 8 }, (_, i) => 93 + i));
    for (const v of again.versions()) expect(toHex(again.at(v).hash)).toBe(hashes[v]);
    expect(again.at(93).audit()).toMatchObject({ ok: true, faults: [] });
    again.close();
  }, 60_000);
});

describe("taking a layout-2 store into pages (migration 006)", () => {

  function layout2Store(): string {
    const dir = tempDir();
    copyFileSync(LAYOUT2_FIXTURE, join(dir, "iavl.sqlite"));
    return dir;
  }

  /** Every version of the fixture reads as the model's, the store goes on with the model's hashes, and prunes by record. */
  async function expectWhole(dir: string): Promise<void> {
    const { m, hashes } = layout2Model();
    const tree = Tree.open(dir, LAYOUT2_OPTIONS);
    expect(schemaOf(dir)).toBe(SCHEMA);
    expect(pagesState(dir)).toMatchObject({ small: 0, marked: false, bare: 0 });
    for (const v of tree.versions()) {
      expect(toHex(tree.at(v).hash), `hash of ${v}`).toBe(hashes[v]);
      expect(tree.at(v).audit().faults, `audit of ${v}`).toEqual([]);
      expectSameVersion(tree.at(v), m.at(v));
    }
    await continueAndPrune(tree, dir);
    const reader = Tree.openReadOnly(dir);
    expect(reader.versions()).toEqual(Array.from({ length: 8 }, (_, i) => 93 + i));
    expectSameVersion(reader.at(93), m.at(93));
    reader.close();
  }

  it("keeps every version whole, with no branch row left below the spine, and prunes every page by record", async () => {
    const dir = layout2Store();
    const before = pagesState(dir);
    expect(before).toMatchObject({ marked: false, pages: 0 });
    expect(before.small).toBeGreaterThan(100);
    await expectWhole(dir);
  }, 60_000);

  it("and when its writer was killed after its last checkpoint: the versions after it recorded rows that are pages now", async () => {
    // As a kill leaves it: 41–43 committed, the last checkpoint 40 (the fixture's close wrote one at 43).
    const dir = layout2Store();
    const db = new Database(join(dir, "iavl.sqlite"));
    db.prepare("UPDATE versions SET checkpoint = 0, root_version = NULL, root_seq = NULL WHERE version = 43").run();
    db.close();
    await expectWhole(dir);
  }, 60_000);

  it("takes a tree of at most 16 leaves into one page, its root with it", () => {
    // Checkpoint 5's root made one small branch row (as in a store of few keys); the tree is not consistent with the
    // values' index any more, so only what the upgrade wrote is checked.
    const dir = layout2Store();
    const db = new Database(join(dir, "iavl.sqlite"));
    const [version, seq, size, hash] = db.prepare("SELECT version, seq, size, hash FROM branch_0 WHERE size BETWEEN 9 AND 16 AND version <= 5 ORDER BY version DESC LIMIT 1").raw().get() as [number, number, number, Uint8Array];
    db.prepare("UPDATE versions SET root_version = ?, root_seq = ? WHERE version = 5").run(version, seq);
    db.close();
    Tree.open(dir, LAYOUT2_OPTIONS).close();
    expect(pagesState(dir)).toMatchObject({ small: 0, marked: false, bare: 0 });
    const [rootVersion, bytes] = inStoreFile(dir, (after) => {
      const [v, seq] = after.prepare("SELECT root_version, root_seq FROM versions WHERE version = 5").raw().get() as [number, number];
      return [v, after.prepare("SELECT bytes FROM pages WHERE id = ?").pluck().get((seq - 2 ** 50) / 32) as Uint8Array] as const;
    });
    expect(rootVersion).toBe(version);
    const page = decodePage(bytes, "the root's page");
    expect(page.size[page.count - 1]).toBe(size);
    expect(toHex(pageHash(page, page.count - 1))).toBe(toHex(hash));
  }, 60_000);

  for (const stopAt of ["3", "all"]) {
    it(`a SIGKILL between its transactions (after ${stopAt === "all" ? "the last page" : `${stopAt} pages`}) leaves a store readers refuse and the next writer finishes`, async () => {
      const dir = layout2Store();
      const child = fileURLToPath(new URL("./fixtures/pages-upgrade-child.ts", import.meta.url));
      const p = spawn(process.execPath, [...scriptArgs(child), join(dir, "iavl.sqlite"), stopAt], { stdio: ["ignore", "pipe", "inherit"] });
      const exited = new Promise((r) => p.once("exit", r));
      const line = await new Promise<string>((resolve) => p.stdout.once("data", (d: Buffer) => resolve(d.toString())));
      p.kill("SIGKILL");
      await exited;
      const [, done, left] = /converted (\d+), (\d+) left/.exec(line)!.map(Number);
      expect(done).toBeGreaterThanOrEqual(3);
      if (stopAt === "3") expect(left).toBeGreaterThan(0);
      else expect(left).toBe(0);
      const state = pagesState(dir);
      expect(state.marked).toBe(true);
      expect(state.pages).toBe(done);
      // Half converted: a reader must not read it (its trees may name rows the writer's open is about to delete).
      expect(() => Tree.openReadOnly(dir)).toThrow(expect.objectContaining({ code: "SCHEMA_TOO_OLD" }));
      await expectWhole(dir);
    }, 60_000);
  }
});
