import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { fromHex, toHex, type ReadonlyTree, type Tree } from "../src/index.js";
import { backends } from "./backends.js";

/**
 * Property tests of the tree against a plain Map model. Keys and values are lower-case hex strings in the model;
 * lower-case hex strings sort exactly as the bytes they spell, so the model's sorted keys are the tree's key order.
 */

type Model = Map<string, string>;

type Cmd =
  | { t: "set"; k: string; v: string }
  | { t: "remove"; k: string }
  | { t: "commit" }
  /** The same key set twice in one version. */
  | { t: "setTwice"; k: string; v1: string; v2: string }
  /** A key created (or updated) and removed again in one version. */
  | { t: "setRemove"; k: string; v: string }
  /** Set, remove, set again in one version. */
  | { t: "setRemoveSet"; k: string; v1: string; v2: string };

/** A small alphabet, so that sets, updates and removes of the same key are frequent. Includes prefixes of each other. */
const ALPHABET = ["00", "01", "0100", "10", "61", "6162", "616263", "7f", "80", "ff", "ff00", "ffff"];

const hexOf = (u: Uint8Array): string => toHex(u);

const keyArb: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...ALPHABET), weight: 6 },
  { arbitrary: fc.integer({ min: 0, max: 255 }).map((n) => n.toString(16).padStart(2, "0")), weight: 2 },
  { arbitrary: fc.uint8Array({ minLength: 1, maxLength: 100 }).map(hexOf), weight: 1 },
);

const valueArb: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constant(""), weight: 1 },
  { arbitrary: fc.uint8Array({ minLength: 1, maxLength: 3 }).map(hexOf), weight: 3 },
  { arbitrary: fc.uint8Array({ minLength: 0, maxLength: 64 }).map(hexOf), weight: 1 },
);

const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  { arbitrary: fc.record({ t: fc.constant("set" as const), k: keyArb, v: valueArb }), weight: 10 },
  { arbitrary: fc.record({ t: fc.constant("remove" as const), k: keyArb }), weight: 5 },
  { arbitrary: fc.constant({ t: "commit" as const }), weight: 3 },
  { arbitrary: fc.record({ t: fc.constant("setTwice" as const), k: keyArb, v1: valueArb, v2: valueArb }), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant("setRemove" as const), k: keyArb, v: valueArb }), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant("setRemoveSet" as const), k: keyArb, v1: valueArb, v2: valueArb }), weight: 1 },
);

interface Bound {
  start: string | null;
  end: string | null;
  reverse: boolean;
}

const boundArb: fc.Arbitrary<Bound> = fc.record({
  start: fc.option(keyArb, { nil: null }),
  end: fc.option(keyArb, { nil: null }),
  reverse: fc.boolean(),
});

/** The model's entries in key order within `[start, end)`, reversed when asked. */
function slice(model: Model, start: string | null, end: string | null, reverse: boolean): Array<[string, string]> {
  const out = [...model.entries()]
    .filter(([k]) => (start === null || k >= start) && (end === null || k < end))
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return reverse ? out.reverse() : out;
}

function listed(it: Iterable<[Uint8Array, Uint8Array]>): Array<[string, string]> {
  return [...it].map(([k, v]) => [toHex(k), toHex(v)]);
}

/** Applies `cmd` to both the tree and the model; returns the keys it touched (none for a commit). */
function apply(tree: Tree, model: Model, cmd: Cmd): string[] {
  switch (cmd.t) {
    case "set":
      tree.set(fromHex(cmd.k), fromHex(cmd.v));
      model.set(cmd.k, cmd.v);
      return [cmd.k];
    case "remove": {
      const was = model.has(cmd.k);
      expect(tree.remove(fromHex(cmd.k))).toBe(was);
      model.delete(cmd.k);
      return [cmd.k];
    }
    case "setTwice":
      tree.set(fromHex(cmd.k), fromHex(cmd.v1));
      tree.set(fromHex(cmd.k), fromHex(cmd.v2));
      model.set(cmd.k, cmd.v2);
      return [cmd.k];
    case "setRemove":
      tree.set(fromHex(cmd.k), fromHex(cmd.v));
      expect(tree.remove(fromHex(cmd.k))).toBe(true);
      model.delete(cmd.k);
      return [cmd.k];
    case "setRemoveSet":
      tree.set(fromHex(cmd.k), fromHex(cmd.v1));
      expect(tree.remove(fromHex(cmd.k))).toBe(true);
      tree.set(fromHex(cmd.k), fromHex(cmd.v2));
      model.set(cmd.k, cmd.v2);
      return [cmd.k];
    case "commit":
      return [];
  }
}

function checkRead(view: Pick<ReadonlyTree, "get" | "has">, model: Model, k: string): void {
  const want = model.get(k);
  const got = view.get(fromHex(k));
  if (want === undefined) expect(got).toBeUndefined();
  else {
    expect(got).toBeInstanceOf(Uint8Array);
    expect(toHex(got!)).toBe(want);
  }
  expect(view.has(fromHex(k))).toBe(want !== undefined);
}

/** Checks a committed view against the model of that version: size, point reads, full and bounded iteration. */
function checkVersion(view: ReadonlyTree, model: Model, seen: Iterable<string>, bounds: Bound[]): void {
  expect(view.size).toBe(model.size);
  for (const k of seen) checkRead(view, model, k);
  expect(listed(view.iterate())).toEqual(slice(model, null, null, false));
  expect(listed(view.iterate({ reverse: true }))).toEqual(slice(model, null, null, true));
  for (const bd of bounds) {
    const opts = {
      start: bd.start === null ? undefined : fromHex(bd.start),
      end: bd.end === null ? undefined : fromHex(bd.end),
      reverse: bd.reverse,
    };
    expect(listed(view.iterate(opts))).toEqual(slice(model, bd.start, bd.end, bd.reverse));
  }
}

/** Runs per property, fitted to what one tree costs on a backend (see {@link fitRuns}). */
interface Runs {
  short: number;
  long: number;
  twin: number;
}

/**
 * Sizes the properties so that the whole file stays under ~20 s on 2 slow cores: a backend whose trees are cheap
 * (memory) gets many runs, one that costs a store on disk or a worker thread per tree gets fewer. `treeMs` is the
 * measured cost of make + one commit + close.
 */
function fitRuns(treeMs: number): Runs {
  const fit = (budgetMs: number, perRunMs: number, min: number, max: number): number =>
    Math.max(min, Math.min(max, Math.floor(budgetMs / perRunMs)));
  return {
    short: fit(2500, treeMs + 3, 6, 200),
    long: fit(1500, treeMs + 80, 2, 15),
    twin: fit(1200, 2 * treeMs + 2, 3, 60),
  };
}

/** Stops shrinking a failure on a slow backend after this long; the counterexample found so far is reported. */
const TIME_LIMIT_MS = 10_000;

describe.each(backends)("the tree behaves like a Map, version by version ($name)", ({ make }) => {
  let runs: Runs = fitRuns(1000);

  beforeAll(() => {
    const t0 = performance.now();
    const t = make();
    t.set(fromHex("01"), fromHex("01"));
    t.commit();
    t.close();
    runs = fitRuns(performance.now() - t0);
  });
  const runHistory = (cmdsArb: fc.Arbitrary<Cmd[]>, numRuns: number): void => {
    fc.assert(
      fc.property(cmdsArb, fc.array(boundArb, { maxLength: 6 }), (cmds, bounds) => {
        const tree = make();
        try {
          const model: Model = new Map();
          const seen = new Set<string>(ALPHABET);
          const committed: Array<{ version: number; hash: string; model: Model }> = [];
          expect(tree.version).toBe(0);
          expect(tree.size).toBe(0);

          const commit = (): void => {
            const c = tree.commit();
            const expected = committed.length + 1;
            expect(c.version).toBe(expected);
            expect(tree.version).toBe(expected);
            expect(toHex(tree.hash)).toBe(toHex(c.hash));
            expect(toHex(tree.workingHash())).toBe(toHex(c.hash));
            expect(tree.size).toBe(model.size);
            expect(listed(tree.iterate())).toEqual(slice(model, null, null, false));
            committed.push({ version: c.version, hash: toHex(c.hash), model: new Map(model) });
          };

          for (const cmd of cmds) {
            if (cmd.t === "commit") {
              commit();
              continue;
            }
            for (const k of apply(tree, model, cmd)) {
              seen.add(k);
              checkRead(tree, model, k);
            }
            // A neighbour from the alphabet, to catch a write that disturbed another key.
            checkRead(tree, model, ALPHABET[cmds.length % ALPHABET.length]!);
          }
          commit();

          expect(tree.versions()).toEqual(committed.map((c) => c.version));
          for (const c of committed) {
            const view = tree.at(c.version);
            expect(view.version).toBe(c.version);
            expect(toHex(view.hash)).toBe(c.hash);
            checkVersion(view, c.model, seen, bounds);
            // Bounds that fall exactly on keys of this version.
            const keys = [...c.model.keys()].sort();
            if (keys.length >= 2) {
              const lo = keys[0]!;
              const hi = keys[keys.length - 1]!;
              const mid = keys[keys.length >> 1]!;
              const exact: Bound[] = [
                { start: lo, end: hi, reverse: false },
                { start: mid, end: hi, reverse: true },
                { start: mid, end: mid, reverse: false },
                { start: hi, end: lo, reverse: false },
                { start: null, end: mid, reverse: true },
                { start: mid, end: null, reverse: false },
              ];
              checkVersion(view, c.model, [], exact);
            }
          }
        } finally {
          tree.close();
        }
      }),
      { numRuns, interruptAfterTimeLimit: TIME_LIMIT_MS },
    );
  };

  it("random commands: working reads after each, full checks at each commit and of every version at the end", () => {
    runHistory(fc.array(cmdArb, { minLength: 1, maxLength: 80 }), runs.short);
  });

  it("longer histories over wider keys (deeper trees, more rotations)", () => {
    const wideKey = fc.oneof(
      fc.integer({ min: 0, max: 255 }).map((n) => n.toString(16).padStart(2, "0")),
      fc.integer({ min: 0, max: 0xffff }).map((n) => n.toString(16).padStart(4, "0")),
      keyArb,
    );
    const wideCmd: fc.Arbitrary<Cmd> = fc.oneof(
      { arbitrary: fc.record({ t: fc.constant("set" as const), k: wideKey, v: valueArb }), weight: 12 },
      { arbitrary: fc.record({ t: fc.constant("remove" as const), k: wideKey }), weight: 6 },
      { arbitrary: fc.constant({ t: "commit" as const }), weight: 1 },
      { arbitrary: cmdArb, weight: 2 },
    );
    runHistory(fc.array(wideCmd, { minLength: 100, maxLength: 400 }), runs.long);
  });

  it("the same commands give the same working hash and commits on a second tree (determinism)", () => {
    fc.assert(
      fc.property(fc.array(cmdArb, { minLength: 1, maxLength: 80 }), (cmds) => {
        const a = make();
        const c = make();
        try {
          const ma: Model = new Map();
          const mc: Model = new Map();
          for (const cmd of cmds) {
            if (cmd.t === "commit") {
              const ra = a.commit();
              const rc = c.commit();
              expect(rc.version).toBe(ra.version);
              expect(toHex(rc.hash)).toBe(toHex(ra.hash));
            } else {
              apply(a, ma, cmd);
              apply(c, mc, cmd);
            }
            expect(toHex(c.workingHash())).toBe(toHex(a.workingHash()));
          }
        } finally {
          a.close();
          c.close();
        }
      }),
      { numRuns: runs.twin, interruptAfterTimeLimit: TIME_LIMIT_MS },
    );
  });
});
