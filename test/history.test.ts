/**
 * A key's history: `history(key, options)` against a model that records each version's net change of each key, on
 * every backend, paged both ways, with the change before the range; on a store also through a read-only handle,
 * after reopening and after pruning (the range starts where every version's changes are kept).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fromHex, toHex, Tree, type HistoryOptions, type KeyHistory } from "../src/index.js";
import { backends, tempDir } from "./backends.js";

type Op = { t: "set"; k: string; v: string } | { t: "remove"; k: string };
const KEYS = ["00", "01", "0100", "7f", "ff"];
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ t: fc.constant("set" as const), k: fc.constantFrom(...KEYS), v: fc.constantFrom("", "aa", "bb") }),
  fc.record({ t: fc.constant("remove" as const), k: fc.constantFrom(...KEYS) }),
);
const versionsArb = fc.array(fc.array(opArb, { maxLength: 8 }), { minLength: 1, maxLength: 12 });

/** Each key's changes, oldest first, as "version=value" ("∅" for a removal): a set, or a removal of a key that was there. */
function play(tree: Tree, versions: Op[][]): Map<string, string[]> {
  const state = new Map<string, string>();
  const out = new Map<string, string[]>(KEYS.map((k) => [k, []]));
  versions.forEach((ops, i) => {
    const before = new Map(state);
    const last = new Map<string, Op>();
    for (const op of ops) {
      if (op.t === "set") tree.set(fromHex(op.k), fromHex(op.v)), state.set(op.k, op.v), last.set(op.k, op);
      else if (tree.remove(fromHex(op.k))) state.delete(op.k), last.set(op.k, op);
    }
    const { version } = tree.commit();
    expect(version).toBe(i + 1);
    for (const [k, op] of last) {
      if (!out.has(k)) out.set(k, []);
      if (op.t === "set") out.get(k)!.push(`${version}=${op.v}`);
      else if (before.has(k)) out.get(k)!.push(`${version}=∅`);
    }
  });
  return out;
}

const shown = (h: KeyHistory): string[] => h.entries.map((e) => `${e.version}=${e.value === null ? "∅" : toHex(e.value)}`);

/** Every page of a history, following `next`. */
function allPages(read: (o: HistoryOptions) => KeyHistory, o: HistoryOptions): string[] {
  const out: string[] = [];
  for (let page = read(o); ; page = read(o.reverse === true ? { ...o, from: page.next! } : { ...o, to: page.next! })) {
    out.push(...shown(page));
    if (page.next === undefined) return out;
  }
}

describe.each(backends)("history(key), $name", ({ make }) => {
  it("gives the versions where the key changed, newest first or reversed, paged, with the change before", () => {
    fc.assert(
      fc.property(versionsArb, fc.integer({ min: 1, max: 12 }), (versions, cut) => {
        const tree = make();
        const model = play(tree, versions);
        const latest = versions.length;
        const from = Math.min(cut, latest);
        for (const k of KEYS) {
          const key = fromHex(k);
          const all = model.get(k)!;
          expect(shown(tree.history(key, { limit: 100, reverse: true }))).toEqual(all);
          expect(shown(tree.history(key))).toEqual([...all].reverse());
          expect(allPages((o) => tree.history(key, o), { limit: 2 })).toEqual([...all].reverse());
          expect(allPages((o) => tree.history(key, o), { limit: 1, reverse: true, from })).toEqual(all.filter((e) => Number(e.split("=")[0]) >= from));
          const h = tree.history(key, { from, before: true });
          expect([h.from, h.to]).toEqual([from, latest]);
          const prior = all.filter((e) => Number(e.split("=")[0]) < from).at(-1);
          const before = h.before === null || h.before === undefined ? h.before : `${h.before.version}=${h.before.value === null ? "∅" : toHex(h.before.value)}`;
          expect(before).toBe(prior ?? null);
        }
        tree.close();
      }),
      { numRuns: 12, seed: 11 },
    );
  });
});

describe("history on a store", () => {
  it("reads the same through a read-only handle and after reopening, starts after pruned versions, and checks its arguments", async () => {
    const dir = tempDir();
    const versions: Op[][] = Array.from({ length: 30 }, (_, v) => [
      v % 4 === 3 ? { t: "remove", k: "01" } : { t: "set", k: "01", v: `${v % 10}${v % 10}` },
      { t: "set", k: `7${v % 5}`, v: "aa" },
    ]);
    const t = Tree.open(dir, { checkpointInterval: 4, shardSize: 5 });
    const model = play(t, versions).get("01")!;
    const key = fromHex("01");
    // Another handle sees the versions once they have landed.
    await t.flush();
    const reader = Tree.openReadOnly(dir);
    expect(reader.history(key, { limit: 1000 })).toEqual(t.history(key, { limit: 1000 }));
    expect(shown(t.history(key, { limit: 1000, reverse: true }))).toEqual(model);
    await t.prune(20);
    const h = t.history(key, { from: 5, before: true, reverse: true });
    expect(h.from).toBe(21);
    expect(shown(h)).toEqual(model.filter((e) => Number(e.split("=")[0]) >= 21));
    expect(h.before).toBeUndefined(); // version 20 is pruned: the change before 21 is no longer known
    const h2 = t.history(key, { from: 25, before: true });
    expect(h2.before).toEqual({ version: 24, value: null }); // 24 removed it
    expect(() => t.history(key, { to: 10 })).toThrow(expect.objectContaining({ code: "VERSION_PRUNED" }));
    expect(() => t.history(key, { from: 9, to: 8 })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => t.history(key, { to: 31 })).toThrow(expect.objectContaining({ code: "VERSION_NOT_FOUND" }));
    expect(() => t.history(key, { limit: 0 })).toThrow(expect.objectContaining({ code: "INVALID_OPTIONS" }));
    expect(() => t.history(key, { colour: 1 } as HistoryOptions)).toThrow(expect.objectContaining({ code: "INVALID_OPTIONS" }));
    t.close();
    const again = Tree.open(dir);
    expect(again.history(key, { limit: 1000 })).toEqual(reader.history(key, { limit: 1000 }));
    expect(shown(again.history(fromHex("70"), { reverse: true })).map((e) => e.split("=")[0])).toEqual(["21", "26"]);
    again.close();
    reader.close();
  });
});
