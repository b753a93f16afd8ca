import { describe, expect, it } from "vitest";
import { latin1 } from "../src/base/bytes.js";
import { Tree } from "../src/index.js";
import { NONE, type NodeTable } from "../src/tree/node.js";
import { mapPages, PageProbe, preorder, SPINE, sqlitePages } from "../bench/page-probe.js";
import { keyOf } from "../bench/scale-data.js";
import { Rng } from "../bench/workload.js";

const VALUE = new Uint8Array(4);

/** A probe grown to `keys` keys in versions of `per`, checkpointed at the end. */
function grown(keys: number, per: number, sizes: number[], interval = 1_000): PageProbe {
  const p = new PageProbe(sizes, interval);
  for (let i = 0; i < keys; i++) {
    p.set(latin1(keyOf(i)), VALUE);
    if ((i + 1) % per === 0) p.commit();
  }
  p.checkpoint();
  return p;
}

/** Pages by definition, walking down with each node's parent: node → page number (pre-order) or SPINE. */
function bruteForce(t: NodeTable, root: number, L: number): { pageOf: Map<number, number>; roots: number[] } {
  const pageOf = new Map<number, number>();
  const roots: number[] = [];
  const walk = (n: number, parent: number, page: number): void => {
    let p = page;
    if (t.size(n) > L) p = SPINE;
    else if (parent === NONE || t.size(parent) > L) p = roots.push(n) - 1;
    pageOf.set(n, p);
    if (t.height(n) > 0) walk(t.left(n), n, p), walk(t.right(n), n, p);
  };
  walk(root, NONE, SPINE);
  return { pageOf, roots };
}

/** The path from the root to `key`'s leaf, and the depth of each node on it. */
function pathTo(t: NodeTable, root: number, key: string): number[] {
  const path = [root];
  for (let n = root; t.height(n) > 0; path.push(n)) n = key < t.key(n) ? t.left(n) : t.right(n);
  return path;
}

describe("page probe (bench/page-probe.ts)", () => {
  it("maps every node of a tree to exactly one canonical page or the spine, as the definition does", () => {
    const p = grown(3_000, 500, [1]);
    const rng = new Rng(7);
    for (let k = 0; k < 400; k++) p.remove(latin1(keyOf(rng.int(3_000))));
    p.commit();
    const { t } = p;
    const { root } = p.state;
    const pre = preorder(t, root);
    for (const L of [1, 2, 3, 5, 8, 16, 32, 100, 10_000]) {
      const m = mapPages(t, pre, L);
      const brute = bruteForce(t, root, L);
      expect(pre.ids.length).toBe(brute.pageOf.size);
      const mapped = m.pageOf.filter((x) => x >= SPINE).length;
      expect(mapped).toBe(brute.pageOf.size); // no id outside the tree mapped
      const nodes = [...brute.pageOf.keys()];
      expect(nodes.map((n) => m.pageOf[n])).toEqual([...brute.pageOf.values()]);
      expect([...m.roots]).toEqual(brute.roots);
      expect(m.spine).toBe([...brute.pageOf.values()].filter((x) => x === SPINE).length);
      // Every page root has size ≤ L and a parent of size > L; a page holds its root's whole subtree.
      const parent = new Map<number, number>();
      for (const n of pre.ids) if (t.height(n) > 0) parent.set(t.left(n), n), parent.set(t.right(n), n);
      const members = new Map<number, number>();
      for (const page of brute.pageOf.values()) members.set(page, (members.get(page) ?? 0) + 1);
      m.roots.forEach((r, page) => {
        expect(t.size(r)).toBeLessThanOrEqual(L);
        if (r !== root) expect(t.size(parent.get(r)!)).toBeGreaterThan(L);
        expect(m.leaves[page]).toBe(t.size(r));
        expect(members.get(page)).toBe(2 * t.size(r) - 1);
      });
    }
  });

  it("counts an update's reads: its leaf's page, and today's path and siblings below the resident levels", () => {
    const sizes = [4, 16];
    const p = grown(4_000, 1_000, sizes);
    const checkpoint = p.version;
    const { t } = p;
    const rng = new Rng(11);
    const read = sizes.map(() => new Set<number>());
    for (let k = 0; k < 200; k++) {
      const key = latin1(keyOf(rng.int(4_000)));
      const { root, resident, maps } = p.state;
      const path = pathTo(t, root, key);
      const touched = new Set(path);
      for (const n of path) if (t.height(n) > 0) touched.add(t.left(n)).add(t.right(n));
      const leaf = path[path.length - 1]!;
      p.set(key, VALUE);
      sizes.forEach((_, j) => {
        // An update rotates nothing: the stored part of its path is in one page (none once the leaf was updated).
        const stored = t.version(leaf) <= checkpoint;
        expect(p.last.pagesA[j]).toBe(stored ? 1 : 0);
        const page = maps[j]!.pageOf[leaf]!;
        expect(p.last.pagesB[j]).toBe(stored && !read[j]!.has(page) ? 1 : 0);
        if (stored) read[j]!.add(page);
        const depth = (n: number): number => path.indexOf(n) >= 0 ? path.indexOf(n) : path.indexOf(parentOn(path, t, n)) + 1;
        const rows = [...touched].filter((n) => t.version(n) <= checkpoint && depth(n) >= resident[j]!).length;
        expect(p.last.rowsA[j]).toBe(rows);
        expect(p.last.foreign[j]).toBe(false);
      });
    }
    expect(p.counts[0]![0]!.pagesA.n).toBe(200);
  });

  it("keeps the tree Tree.memory() builds (same root hashes) under churn, and finds rotations across pages", () => {
    const sizes = [2, 8, 1e9];
    const p = new PageProbe(sizes, 7);
    const tree = Tree.memory();
    const rng = new Rng(3);
    const live: number[] = [];
    let next = 0;
    for (let v = 1; v <= 60; v++) {
      for (let k = 0; k < 40; k++) {
        const r = rng.int(10);
        if (r < 2 && live.length > 0) {
          const at = rng.int(live.length);
          const key = keyOf(live[at]!);
          live[at] = live[live.length - 1]!;
          live.pop();
          expect(p.remove(latin1(key))).toBe(true);
          expect(tree.remove(key)).toBe(true);
        } else {
          const fresh = r < 6 || live.length === 0;
          const i = fresh ? next++ : live[rng.int(live.length)]!;
          if (fresh) live.push(i);
          p.set(latin1(keyOf(i)), VALUE);
          tree.set(keyOf(i), VALUE);
        }
      }
      p.commit();
      expect(p.hash()).toEqual(tree.commit().hash);
    }
    expect(p.hashOpens).toBe(0);
    const total = (j: number, f: "foreign" | "multi"): number => p.counts[j]!.reduce((s, k) => s + k[f], 0);
    expect(total(0, "foreign")).toBeGreaterThan(0);
    expect(total(0, "multi")).toBeGreaterThan(0);
    // One page holds the whole tree: never more than one read a change, and no neighbour.
    expect(total(2, "foreign")).toBe(0);
    expect(p.counts[2]!.every((k) => k.pagesA.max <= 1)).toBe(true);
    expect(p.checkpoints[0]!.length).toBe(8);
  });

  it("counts SQLite overflow pages as btree.c splits a payload", () => {
    expect(sqlitePages(4_061)).toBe(1);
    expect(sqlitePages(4_062)).toBe(2);
    expect(sqlitePages(4_061 + 4_092)).toBe(2); // what is past the local part fits one overflow page
    expect(sqlitePages(4_061 + 4_093)).toBe(3); // the local part falls to minLocal (489 B)
    expect(sqlitePages(8_000, 8_192)).toBe(1);
  });
});

/** The parent of `n` among `path`'s nodes (it is a sibling of a node on the path). */
function parentOn(path: number[], t: NodeTable, n: number): number {
  return path.find((m) => t.height(m) > 0 && (t.left(m) === n || t.right(m) === n))!;
}
