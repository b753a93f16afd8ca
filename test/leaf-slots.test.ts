/**
 * Leaves row ids freed by pruning are taken again by later commits (src/store/write/leaf-slots.ts, migration 008):
 * the table stops growing under churn, and every read that finds a version's rows by id (changes, operations, the
 * replays of a reopen, the prune's own steps) still finds exactly that version's rows, inline and with the writer
 * thread of durability "async" (whose versions in flight hold freed ids not yet removed from the free list).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { toHex, Tree, type KeyOp } from "../src/index.js";
import { leafIds, packLeafIds } from "../src/sqlite/leaf-ids.js";
import { packageFile } from "../src/base/package-files.js";
import { tempDir } from "./backends.js";
import { applyVersion } from "./fixtures/version-ops.js";
import { leafSlotsProblem } from "./helpers.js";
import { LeafSlots } from "../src/store/write/leaf-slots.js";
import type { LeafReader } from "../src/sqlite/leaf-reader.js";

/** The operations `applyVersion` makes for `version`, recorded, with the net changes they leave (key order). */
function recorded(version: number, before: Map<string, string>): { ops: KeyOp[]; changes: string[] } {
  const ops: KeyOp[] = [];
  const state = new Map(before);
  const last = new Map<string, string | null>();
  const existed = new Set<string>();
  const recorder = {
    set: (k: Uint8Array, v: Uint8Array) => {
      const key = toHex(k);
      if (!last.has(key) && state.has(key)) existed.add(key);
      ops.push({ key: k.slice(), value: v.slice() });
      state.set(key, toHex(v));
      last.set(key, toHex(v));
    },
    remove: (k: Uint8Array) => {
      const key = toHex(k);
      if (!state.has(key)) return false;
      if (!last.has(key)) existed.add(key);
      ops.push({ key: k.slice(), value: null });
      state.delete(key);
      last.set(key, null);
      return true;
    },
  };
  applyVersion(recorder as unknown as Tree, version, 120, 150);
  // Only a key's last set keeps its value (KeyOp): an earlier one reads back empty.
  const seen = new Set<string>();
  for (let i = ops.length - 1; i >= 0; i--) {
    const key = toHex(ops[i]!.key);
    if (seen.has(key) && ops[i]!.value !== null) ops[i] = { key: ops[i]!.key, value: new Uint8Array(0) };
    seen.add(key);
  }
  for (const [k, v] of state) before.set(k, v);
  for (const k of [...before.keys()]) if (!state.has(k)) before.delete(k);
  const changes = [...last.entries()]
    .filter(([k, v]) => v !== null || existed.has(k))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v ?? "∅"}`);
  return { ops, changes };
}

const shown = (ops: KeyOp[]): string[] => ops.map((o) => `${toHex(o.key)}=${o.value === null ? "∅" : toHex(o.value)}`);

describe("leaves row ids", () => {
  it("pack as the first id and the gaps after it, and a run packs to nothing", () => {
    expect(packLeafIds([5, 6, 7])).toBeNull();
    expect(packLeafIds([])).toBeNull();
    const ids = [3, 9, 10, 300, 301, 70_000];
    expect(leafIds(3, ids.length, packLeafIds(ids), 1)).toEqual(ids);
    expect(leafIds(5, 3, null, 1)).toEqual([5, 6, 7]);
    expect(() => leafIds(3, ids.length + 1, packLeafIds(ids), 1)).toThrow(/do not parse/);
  });

  it("are taken where they lie densely (half a run of 8 or more), the rest of a commit's rows new", () => {
    const free = [1, 9, 10, 11, 12, 30, 41, 42, 43, 44, 45];
    const reader = { nextId: () => 100, freeIds: (after: number, limit: number) => free.filter((id) => id > after).slice(0, limit) };
    const slots = new LeafSlots(reader as unknown as LeafReader, () => true);
    const g = slots.grant(7, 7);
    expect(g.ids).toEqual([9, 10, 11, 12, 41, 42, 43]);
    expect(g.reused).toBe(7);
    slots.taken(g);
    free.splice(0, free.length, 1, 30, 44, 45);
    // Sparse ids wait for their neighbours; new ids follow every id in use.
    expect(slots.grant(8, 2).ids).toEqual([100, 101]);
  });

  it("migration 008 lists as free every id below the largest that no row holds", () => {
    const db = new Database(":memory:");
    db.exec("CREATE TABLE versions (version INTEGER PRIMARY KEY); CREATE TABLE version_ops (version INTEGER PRIMARY KEY);");
    db.exec("CREATE TABLE leaves (id INTEGER PRIMARY KEY, version INTEGER, key BLOB);");
    for (const id of [2, 3, 7, 8, 12]) db.prepare("INSERT INTO leaves (id, version, key) VALUES (?, 1, x'00')").run(id);
    const dir = packageFile(import.meta.url, "migrations", "the migrations folder");
    db.exec(readFileSync(join(dir, "008_leaf_slots.sql"), "utf8"));
    expect(db.prepare("SELECT id FROM free_leaves ORDER BY id").pluck().all()).toEqual([1, 4, 5, 6, 9, 10, 11]);
    // From then on every deleted row's id is free.
    db.prepare("DELETE FROM leaves WHERE id IN (3, 12)").run();
    expect(db.prepare("SELECT id FROM free_leaves ORDER BY id").pluck().all()).toEqual([1, 3, 4, 5, 6, 9, 10, 11, 12]);
    db.close();
  });

  it.each(["normal", "async"] as const)("freed by prunes are taken by later commits, whose rows read back and replay exactly (%s)", async (durability) => {
    const dir = tempDir();
    const memory = Tree.memory();
    const t = Tree.open(dir, { durability, checkpointInterval: 5 });
    const state = new Map<string, string>();
    const expected: Array<{ ops: KeyOp[]; changes: string[] }> = [];
    let written = 0;
    for (let v = 1; v <= 80; v++) {
      const r = recorded(v, state);
      expected[v] = r;
      for (const tree of [t, memory]) applyVersion(tree, v, 120, 150);
      const hash = toHex(t.commit().hash);
      expect(hash).toBe(toHex(memory.commit().hash));
      written += r.changes.length;
      // Every tenth version, an explicit prune keeps the last 6 (async: not waiting for the writer thread first).
      if (v % 10 === 0) await t.prune(v - 6);
    }
    await t.flush();
    // 75 is the base replays start from: its changes are kept, its operations not.
    for (const v of [75, 76, 78, 80]) expect(shown([...t.changes(v, v)].map((c) => ({ key: c.key, value: c.value })))).toEqual(expected[v]!.changes);
    for (const v of [76, 78, 80]) expect(shown(t.operations(v))).toEqual(shown(expected[v]!.ops));
    t.close();

    const db = new Database(join(dir, "iavl.sqlite"), { readonly: true });
    const maxId = db.prepare("SELECT max(id) FROM leaves").pluck().get() as number;
    const listed = db.prepare("SELECT count(*) FROM versions WHERE leaf_ids IS NOT NULL").pluck().get() as number;
    db.close();
    // Without reuse the ids would run to every row ever written; 150 keys churned 80 times leave far fewer.
    expect(maxId).toBeLessThan(written / 2);
    expect(listed).toBeGreaterThan(0);
    expect(leafSlotsProblem(dir)).toBeUndefined();

    // A reopen replays the versions after the last checkpoint from their listed rows.
    const again = Tree.open(dir);
    expect(toHex(again.hash)).toBe(toHex(memory.hash));
    for (const v of [76, 79]) {
      const [a, b] = [[...again.at(v).iterate()], [...memory.at(v).iterate()]];
      expect(a.map(([k, x]) => toHex(k) + toHex(x))).toEqual(b.map(([k, x]) => toHex(k) + toHex(x)));
    }
    applyVersion(again, 81, 120, 150);
    applyVersion(memory, 81, 120, 150);
    expect(toHex(again.commit().hash)).toBe(toHex(memory.commit().hash));
    again.close();
    expect(leafSlotsProblem(dir)).toBeUndefined();
  });

  it("granted to versions still in flight to the writer thread are not granted again", async () => {
    const dir = tempDir();
    const memory = Tree.memory();
    const t = Tree.open(dir, { durability: "async", checkpointInterval: 5, busyTimeoutMs: 2000 });
    for (let v = 1; v <= 30; v++) {
      for (const tree of [t, memory]) applyVersion(tree, v, 120, 150);
      memory.commit();
      t.commit();
    }
    await t.prune(28);
    const db = new Database(join(dir, "iavl.sqlite"));
    const free = (): number => db.prepare("SELECT count(*) FROM free_leaves").pluck().get() as number;
    expect(free()).toBeGreaterThan(200);
    const top = db.prepare("SELECT max(id) FROM leaves").pluck().get() as number;
    // Another connection holds the write lock, so the next versions wait in the queue, each granted freed ids that
    // the free list still shows until its write lands.
    db.exec("BEGIN IMMEDIATE");
    for (let v = 31; v <= 33; v++) {
      for (const tree of [t, memory]) applyVersion(tree, v, 120, 150);
      memory.commit();
      t.commit();
    }
    db.exec("ROLLBACK");
    await t.flush();
    expect(toHex(t.hash)).toBe(toHex(memory.hash));
    // All three took freed ids (below every id in use before them), each its own.
    const firsts = db.prepare("SELECT first_leaf FROM versions WHERE version BETWEEN 31 AND 33").pluck().all() as number[];
    db.close();
    expect(firsts.length).toBe(3);
    for (const f of firsts) expect(f).toBeLessThan(top);
    t.close();
    expect(leafSlotsProblem(dir)).toBeUndefined();
  });
});
