import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { iavlSpec, verifyMembership } from "@confio/ics23";
import { describe, expect, it } from "vitest";
import { decodeItems, encodeItems, IavlError, toHex, Tree, type ExportNode } from "../src/index.js";
import { tempDir } from "./backends.js";
import { codeOf, inStoreFile, treehashOps } from "./helpers.js";

function treehashStore(dir: string): Tree {
  const t = Tree.open(dir, { checkpointInterval: 3 });
  for (const v of treehashOps()) {
    for (const op of v.ops) op[0] === "s" ? t.set(op[1], op[2]) : t.remove(op[1]);
    t.commit();
  }
  return t;
}

describe("Tree.import into a store", () => {
  it("round-trips export → wire → import with the same hash, size, reads and proofs", async () => {
    const src = treehashStore(tempDir());
    const wire = [...encodeItems(src.at(4).export())];
    const dest = join(tempDir(), "imported");
    const t = await Tree.import(dest, decodeItems(wire), { version: 4, expectedHash: src.hash });
    expect(t.version).toBe(4);
    expect(toHex(t.hash)).toBe(toHex(src.hash));
    expect(t.size).toBe(src.size);
    expect([...t.iterate()].map(([k, v]) => toHex(k) + toHex(v))).toEqual([...src.iterate()].map(([k, v]) => toHex(k) + toHex(v)));
    const [k, v] = t.iterate().next().value as [Uint8Array, Uint8Array];
    expect(verifyMembership(t.proof(k), iavlSpec, t.hash, k, v)).toBe(true);
    // The imported store continues like the original.
    for (const tree of [src, t]) tree.remove(k);
    expect(toHex(t.commit().hash)).toBe(toHex(src.commit().hash));
    t.close();
    const reopened = Tree.open(dest);
    expect(reopened.version).toBe(5);
    expect(toHex(reopened.at(4).hash)).toBe(toHex(src.at(4).hash));
    // A version before the snapshot was never in this store.
    expect(() => reopened.at(3)).toThrowError(IavlError);
    reopened.close();
    src.close();
  });

  it("lays the tree out as a checkpoint would: pages for the subtrees of at most 16 leaves, branch rows only above them", async () => {
    const src = Tree.open(tempDir(), { checkpointInterval: 2 });
    const key = (i: number): Uint8Array => new TextEncoder().encode(`k${(i * 7919) % 5000}`);
    for (let v = 1; v <= 3; v++) {
      for (let i = (v - 1) * 1500; i < v * 1500; i++) src.set(key(i), new Uint8Array([v, i & 255]));
      for (let i = 0; i < 100; i++) src.remove(key(v * 300 + i));
      src.commit();
    }
    const dest = join(tempDir(), "imported");
    (await Tree.import(dest, src.at(3).export(), { version: 3, expectedHash: src.hash })).close();
    const { smallest, pages, spine } = inStoreFile(dest, (db) => {
      const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'branch%'").pluck().all() as string[];
      return {
        smallest: tables.map((t) => db.prepare(`SELECT min(size) FROM ${t}`).pluck().get() as number | null),
        pages: db.prepare("SELECT count(*) FROM pages").pluck().get() as number,
        spine: tables.reduce((sum, t) => sum + (db.prepare(`SELECT count(*) FROM ${t}`).pluck().get() as number), 0),
      };
    });
    expect(smallest.filter((s) => s !== null && s <= 16)).toEqual([]);
    // ~0.09 pages a key, about as many spine rows.
    expect(pages).toBeGreaterThan(src.size / 20);
    expect(spine).toBeLessThan(pages * 2);
    // Reopened, every read goes through the pages; the store goes on as the source does.
    const t = Tree.open(dest);
    expect([...t.iterate()].length).toBe(src.size);
    for (let i = 0; i < 400; i++) {
      for (const tree of [src, t]) i % 3 === 0 ? tree.remove(key(i * 11)) : tree.set(key(i * 13 + 1), new Uint8Array([9]));
    }
    expect(toHex(t.commit().hash)).toBe(toHex(src.commit().hash));
    const [k, v] = t.iterate().next().value as [Uint8Array, Uint8Array];
    expect(verifyMembership(t.at(3).proof(k), iavlSpec, t.at(3).hash, k, src.at(3).get(k)!)).toBe(true);
    expect(verifyMembership(t.proof(k), iavlSpec, t.hash, k, v)).toBe(true);
    t.close();
    src.close();
  });

  it("exports of a store equal exports of a memory tree with the same history", () => {
    const s = treehashStore(tempDir());
    const m = Tree.memory();
    for (const v of treehashOps()) {
      for (const op of v.ops) op[0] === "s" ? m.set(op[1], op[2]) : m.remove(op[1]);
      m.commit();
    }
    for (const v of [2, 4]) {
      const a = [...s.at(v).export()].map((n) => `${toHex(n.key)}:${n.version}:${n.height}:${n.value ? toHex(n.value) : ""}`);
      const b = [...m.at(v).export()].map((n) => `${toHex(n.key)}:${n.version}:${n.height}:${n.value ? toHex(n.value) : ""}`);
      expect(a).toEqual(b);
    }
    s.close();
  });

  it("leaves nothing behind when the stream is refused or the hash does not match", async () => {
    const src = treehashStore(tempDir());
    const nodes = [...src.at(4).export()];
    const parent = tempDir();
    const cases: Array<[string, ExportNode[], Uint8Array | undefined]> = [
      ["truncated", nodes.slice(0, nodes.length - 5), undefined],
      ["reordered", [nodes[1]!, nodes[0]!, ...nodes.slice(2)], undefined],
      ["wrong hash", nodes, new Uint8Array(32)],
    ];
    for (const [name, stream, expectedHash] of cases) {
      const dest = join(parent, name.replace(" ", "-"));
      let err: unknown;
      try {
        await Tree.import(dest, stream, { version: 4, expectedHash });
      } catch (e) {
        err = e;
      }
      expect((err as IavlError).code, name).toBe("INVALID_SNAPSHOT");
      expect(existsSync(dest), name).toBe(false);
    }
    expect(readdirSync(parent)).toEqual([]);
    src.close();
  });
});

/** The nodes of `nodes`, with a pause after the first `at` of them until `go` is called. */
function paused(nodes: ExportNode[], at: number): { stream: AsyncIterable<ExportNode>; reached: Promise<void>; go: () => void } {
  let reach = (): void => undefined;
  let go = (): void => undefined;
  const reached = new Promise<void>((r) => (reach = r));
  const gate = new Promise<void>((r) => (go = r));
  const stream = (async function* () {
    for (const [i, n] of nodes.entries()) {
      if (i === at) {
        reach();
        await gate;
      }
      yield n;
    }
  })();
  return { stream, reached, go };
}

/** The error `p` rejects with, or undefined. */
async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  return undefined;
}

describe("Tree.import holds its target's writer lock", () => {
  it("a writer opening the target during the import gets LOCKED naming this process; the import then completes", async () => {
    const src = treehashStore(tempDir());
    const nodes = [...src.at(4).export()];
    const hash = src.at(4).hash;
    src.close();
    for (const made of [false, true]) {
      const dest = join(tempDir(), "dest");
      if (!made) mkdirSync(dest);
      const { stream, reached, go } = paused(nodes, 3);
      const importing = Tree.import(dest, stream, { version: 4, expectedHash: hash });
      await reached;
      let err: unknown;
      try {
        Tree.open(dest).close();
      } catch (e) {
        err = e;
      }
      expect([(err as IavlError).code, (err as IavlError).message]).toEqual(["LOCKED", expect.stringContaining(`process ${process.pid}`)]);
      go();
      const t = await importing;
      expect([t.version, toHex(t.hash)]).toEqual([4, toHex(hash)]);
      t.close();
      expect(readdirSync(dirname(dest))).toEqual(["dest"]);
    }
  });

  it("a failed import leaves a folder it made gone and one it found empty, even of the lock's files", async () => {
    const src = treehashStore(tempDir());
    const nodes = [...src.at(4).export()];
    src.close();
    for (const made of [false, true]) {
      const parent = tempDir();
      const dest = join(parent, "dest");
      if (!made) mkdirSync(dest);
      const { stream, reached, go } = paused(nodes.slice(0, -2), 3);
      const importing = rejection(Tree.import(dest, stream, { version: 4 }));
      await reached;
      expect(codeOf(() => Tree.open(dest).close())).toBe("LOCKED");
      go();
      expect(((await importing) as IavlError).code).toBe("INVALID_SNAPSHOT");
      expect(readdirSync(parent)).toEqual(made ? [] : ["dest"]);
      if (!made) expect(readdirSync(dest)).toEqual([]);
      // And the target takes the next import.
      const t = await Tree.import(dest, nodes, { version: 4 });
      expect(t.version).toBe(4);
      t.close();
    }
  });
});
