import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fromHex, IavlError, toHex, Tree } from "../src/index.js";
import { NONE, type NodeTable } from "../src/tree/node.js";
import type { ExportNode } from "../src/tree/export-node.js";
import { tempDir } from "./backends.js";
import { randomBytes, rng } from "./helpers.js";

/**
 * Nodes live in a table and are freed explicitly (src/tree/node-table.ts): these tests hold the owners to it. A
 * node freed too early breaks reads and hashes of a kept version; one never freed is a leak that no other test sees.
 */

interface Internals {
  backend: { t: NodeTable; roots: Map<number, number> };
  state: { working: number };
}

/** Every node reachable from `roots`, each once (versions share subtrees). */
function reachable(t: NodeTable, roots: Iterable<number>): Set<number> {
  const seen = new Set<number>();
  const stack = [...roots].filter((r) => r !== NONE);
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (seen.has(n)) continue;
    seen.add(n);
    if (t.height(n) > 0) stack.push(t.left(n), t.right(n));
  }
  return seen;
}

type Cmd = { t: "set"; k: number; v: number } | { t: "remove"; k: number } | { t: "commit" } | { t: "prune"; back: number; every: number };

const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  { arbitrary: fc.record({ t: fc.constant("set" as const), k: fc.integer({ min: 0, max: 60 }), v: fc.integer({ min: 0, max: 9 }) }), weight: 10 },
  { arbitrary: fc.record({ t: fc.constant("remove" as const), k: fc.integer({ min: 0, max: 60 }) }), weight: 4 },
  { arbitrary: fc.constant({ t: "commit" as const }), weight: 4 },
  { arbitrary: fc.record({ t: fc.constant("prune" as const), back: fc.integer({ min: 0, max: 4 }), every: fc.integer({ min: 0, max: 3 }) }), weight: 2 },
);

const key = (k: number): Uint8Array => fromHex(k.toString(16).padStart(4, "0"));

describe("Tree.memory() frees a node once no kept version holds it", () => {
  it("keeps exactly the nodes the kept versions and the working state reach, through sets, removes and prunes with and without keepEvery", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(cmdArb, { minLength: 1, maxLength: 120 }), async (cmds) => {
        const tree = Tree.memory();
        const inner = tree as unknown as Internals;
        const t = inner.backend.t;
        const hashes = new Map<number, string>();
        const check = (): void => {
          const live = reachable(t, [...inner.backend.roots.values(), inner.state.working]);
          for (const n of live) expect(t.isFree(n)).toBe(false);
          expect(t.live).toBe(live.size);
        };
        for (const c of cmds) {
          if (c.t === "set") tree.set(key(c.k), Uint8Array.of(c.v));
          else if (c.t === "remove") tree.remove(key(c.k));
          else if (c.t === "commit") hashes.set(tree.commit().version, toHex(tree.hash));
          else if (tree.version > 0) {
            await tree.prune(Math.max(1, tree.version - c.back), c.every === 0 ? {} : { keepEvery: c.every });
            check();
          }
        }
        tree.commit();
        check();
        // Every kept version still reads whole: its nodes were not freed under it.
        for (const v of tree.versions()) if (hashes.has(v)) expect(toHex(tree.at(v).hash)).toBe(hashes.get(v));
        // Pruning everything but the latest leaves only the latest tree.
        await tree.prune(tree.version);
        check();
        tree.close();
      }),
      { numRuns: 150 },
    );
  });

  it("a view of a version pruned since it was made throws VERSION_PRUNED, mid-iteration too", async () => {
    const tree = Tree.memory();
    for (let v = 1; v <= 3; v++) {
      for (let k = 0; k < 50; k++) tree.set(key(k * v), Uint8Array.of(v));
      tree.commit();
    }
    const view = tree.at(1);
    const it = view.iterate();
    expect(it.next().done).toBe(false);
    await tree.prune(2);
    const code = (f: () => unknown): string | undefined => {
      try {
        f();
      } catch (e) {
        return e instanceof IavlError ? e.code : String(e);
      }
      return undefined;
    };
    expect(code(() => view.get(key(1)))).toBe("VERSION_PRUNED");
    expect(code(() => it.next())).toBe("VERSION_PRUNED");
    tree.close();
  });
});

describe("a store's walk over its live tree", () => {
  const line = (n: ExportNode): string => `${toHex(n.key)}:${n.version}:${n.height}:${n.value === undefined ? "" : toHex(n.value)}`;

  it("exports the version it began on whole while the writer commits, evicts and frees, and releases the nodes it held when closed or dropped", async () => {
    const dir = tempDir();
    // The smallest budget (8 MiB) holds some 40,000 nodes: past 20,000 keys, commits evict and reload, and free what
    // they replace.
    const s = Tree.open(dir, { memoryBudgetMiB: 8, checkpointInterval: 3 });
    const m = Tree.memory();
    const next = rng(11);
    const both = (f: (t: Tree) => void): void => {
      f(s);
      f(m);
    };
    const keys: Uint8Array[] = [];
    const known = new Set<string>();
    const version = (n: number): void => {
      for (let i = 0; i < n; i++) {
        if (keys.length > 100 && next() < 0.25) {
          const k = keys.splice(Math.floor(next() * keys.length), 1)[0]!;
          known.delete(toHex(k));
          both((t) => t.remove(k));
        } else {
          const k = keys.length > 0 && next() < 0.3 ? keys[Math.floor(next() * keys.length)]! : randomBytes(next, 8);
          if (!known.has(toHex(k))) keys.push(k), known.add(toHex(k));
          const value = randomBytes(next, 16);
          both((t) => t.set(k, value));
        }
      }
      both((t) => t.commit());
    };
    for (let v = 0; v < 6; v++) version(6000);
    // Not a checkpoint: the walk goes over nodes held only in memory.
    version(500);
    const at = s.version;
    const want = [...m.at(at).export()].map(line);
    const walk = s.at(at).export();
    const got: string[] = [];
    for (let i = 0; i < 1000; i++) got.push(line(walk.next().value as ExportNode));
    const t = (s as unknown as { backend: { set: { src: { t: NodeTable } } } }).backend.set.src.t;
    const before = t.live;
    for (let v = 0; v < 6; v++) version(2000);
    // Held back while the walk is open: the nodes of version `at` it may still reach.
    const held = t.live;
    expect(held).toBeGreaterThan(before);
    for (let r = walk.next(); r.done !== true; r = walk.next()) got.push(line(r.value));
    expect(got).toEqual(want);
    // The walk ended: what it held back is freed.
    expect(t.live).toBeLessThan(held);

    // A walk closed early releases its hold as well.
    const early = s.at(s.version).export();
    early.next();
    for (let v = 0; v < 3; v++) version(2000);
    const pinned = t.live;
    early.return?.();
    expect(t.live).toBeLessThan(pinned);

    // And one dropped unfinished, once the collector has taken it.
    let dropped: Iterator<ExportNode> | undefined = s.at(s.version).export();
    dropped.next();
    for (let v = 0; v < 3; v++) version(2000);
    const held2 = t.live;
    dropped = undefined;
    // Collected at a full collection, and released by its finalizer a task later: as many rounds as that takes.
    while (t.live >= held2) {
      (globalThis as { gc: () => void }).gc();
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(t.live).toBeLessThan(held2);
    s.close();
    m.close();
  });
});
