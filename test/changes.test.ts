/**
 * Change streams: `changes(from, to)` against a model that records, per version, each key's last operation and
 * whether the key existed before the version — on every backend, on a read-only handle, after reopening and after
 * pruning (where the versions kept still answer and pruned ones refuse).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fromHex, toHex, Tree, type VersionChange } from "../src/index.js";
import { backends, tempDir } from "./backends.js";

type Op = { t: "set"; k: string; v: string } | { t: "remove"; k: string };

/** Keys from a small alphabet (so keys are touched twice, created and removed in one version), values short. */
const keyArb = fc.constantFrom("00", "01", "0100", "10", "61", "6162", "7f", "80", "ff", "ff00");
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ t: fc.constant("set" as const), k: keyArb, v: fc.constantFrom("", "aa", "bb", "0102") }),
  fc.record({ t: fc.constant("remove" as const), k: keyArb }),
);
const historyArb = fc.array(fc.array(opArb, { maxLength: 12 }), { minLength: 1, maxLength: 8 });

/** Applies the history to `tree`, committing each version; returns the expected changes of each version. */
function play(tree: Tree, history: Op[][]): string[][] {
  const state = new Map<string, string>();
  const expected: string[][] = [];
  for (const ops of history) {
    const before = new Map(state);
    const last = new Map<string, Op>();
    for (const op of ops) {
      if (op.t === "set") {
        tree.set(fromHex(op.k), fromHex(op.v));
        state.set(op.k, op.v);
        last.set(op.k, op);
      } else if (tree.remove(fromHex(op.k))) {
        state.delete(op.k);
        last.set(op.k, op);
      }
    }
    tree.commit();
    const changes = [...last.entries()]
      .filter(([k, op]) => op.t === "set" || before.has(k))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, op]) => (op.t === "set" ? `${k}=${op.v}` : `${k}=∅`));
    expected.push(changes);
  }
  return expected;
}

function shown(cs: Iterable<VersionChange>): string[][] {
  const out: string[][] = [];
  for (const c of cs) (out[c.version - 1] ??= []).push(`${toHex(c.key)}=${c.value === null ? "∅" : toHex(c.value)}`);
  return out;
}

describe.each(backends)("changes(from, to), $name", ({ make }) => {
  it("gives each version's net changes in key order, as the model does", () => {
    fc.assert(
      fc.property(historyArb, (history) => {
        const tree = make();
        const expected = play(tree, history);
        const got = shown(tree.changes(1, history.length));
        for (let v = 0; v < history.length; v++) expect(got[v] ?? [], `version ${v + 1}`).toEqual(expected[v]);
        // One version alone is the same slice of the stream.
        const one = Math.ceil(history.length / 2);
        expect(shown(tree.changes(one, one))[one - 1] ?? []).toEqual(expected[one - 1]);
        tree.close();
      }),
      { numRuns: 15, seed: 7 },
    );
  });
});

describe("changes on a store", () => {
  it("reads the same from a read-only handle and after reopening, refuses pruned versions, and checks its arguments", async () => {
    const dir = tempDir();
    const history: Op[][] = Array.from({ length: 30 }, (_, v) =>
      Array.from({ length: 20 }, (_, i): Op => ((v + i) % 5 === 0 ? { t: "remove", k: `0${(v * 3 + i) % 10}` } : { t: "set", k: `0${(v + i) % 10}`, v: `0${i % 10}` })),
    );
    const t = Tree.open(dir, { checkpointInterval: 4, shardSize: 5 });
    const expected = play(t, history);
    await t.flush();
    const reader = Tree.openReadOnly(dir);
    expect(shown(reader.changes(1, 30))).toEqual(shown(t.changes(1, 30)));
    expect(shown(t.changes(1, 30)).map((c) => c ?? [])).toEqual(expected);
    await t.prune(20);
    expect(() => [...t.changes(10, 22)]).toThrow(expect.objectContaining({ code: "VERSION_PRUNED" }));
    expect(shown(t.changes(21, 30)).slice(20).map((c) => c ?? [])).toEqual(expected.slice(20));
    expect(() => [...t.changes(5, 4)]).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => [...t.changes(29, 31)]).toThrow(expect.objectContaining({ code: "VERSION_NOT_FOUND" }));
    t.close();
    const again = Tree.open(dir);
    expect(shown(again.changes(21, 30)).slice(20).map((c) => c ?? [])).toEqual(expected.slice(20));
    again.close();
    expect(shown(reader.changes(21, 30)).slice(20).map((c) => c ?? [])).toEqual(expected.slice(20));
    reader.close();
  });
});
