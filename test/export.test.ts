import { describe, expect, it } from "vitest";
import { IavlError, Tree } from "../src/index.js";
import { buildTree, buildTreeAsync, Importer, type ImportedNode } from "../src/tree/importer.js";
import type { ExportNode } from "../src/tree/export-node.js";
import { decodeItems, decodeSnapshotItems, encodeItems, encodeSnapshotItems, type SnapshotItem } from "../src/sync/wire.js";
import { concatBytes, equalBytes, latin1, toHex } from "../src/base/bytes.js";
import { digestBytes, EMPTY_HASH } from "../src/base/hash.js";
import { NONE } from "../src/tree/node.js";
import { indexOf } from "../src/tree/read.js";
import { tempDir } from "./backends.js";
import { b, randomBytes, rng, treehashOps } from "./helpers.js";
import { MutatorTree } from "./mutator-tree.js";

type Op = ["s", Uint8Array, Uint8Array] | ["d", Uint8Array];

/**
 * Applies one list of ops per version with the tree's own Mutator and returns the last root. Tree keeps its root
 * private, so the test builds it the way Tree does (same Mutator, same commit step).
 */
function buildRoot(versions: Op[][]): Built {
  const tree = new MutatorTree();
  let version = 0;
  for (const ops of versions) {
    for (const op of ops) if (op[0] === "s") tree.set(op[1], op[2]); else tree.remove(op[1]);
    version = tree.commit();
  }
  return { tree, root: tree.root, version };
}

/** A root and the table it lives in. */
interface Built {
  tree: MutatorTree;
  root: number;
  version: number;
}

/** A tree an importer rebuilt, in a table of its own. */
function adopted(n: ImportedNode | undefined, version: number): Built {
  const tree = new MutatorTree();
  return { tree, root: tree.adopt(n), version };
}

function rootHash(x: Built | ImportedNode | undefined): Uint8Array {
  if (x === undefined) return EMPTY_HASH;
  return "tree" in x ? x.tree.hash(x.root) : digestBytes(x.hash);
}

function sizeOf(x: Built): number {
  return x.root === NONE ? 0 : x.tree.t.size(x.root);
}

function exportAll(x: Built): ExportNode[] {
  return x.tree.export(x.root);
}

/** Splits `bytes` into chunks of random sizes (many of 1 byte, some large), as a network would. */
function* randomChunks(bytes: Uint8Array, rand: () => number): Generator<Uint8Array> {
  let p = 0;
  while (p < bytes.length) {
    const r = rand();
    const n = r < 0.3 ? 1 : r < 0.8 ? 1 + Math.floor(rand() * 40) : 1 + Math.floor(rand() * 5000);
    yield bytes.slice(p, p + n);
    p += n;
  }
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

/** Asserts the two roots read identically: hash, size, every pair in order, every get and index. */
function expectSameReads(a: Built, c: Built): void {
  const version = a.version;
  const va = a.tree.view(version, a.root);
  const vc = c.tree.view(version, c.root);
  expect(toHex(vc.hash)).toBe(toHex(va.hash));
  expect(vc.size).toBe(va.size);
  const pa = [...va.iterate()];
  const pc = [...vc.iterate()];
  expect(pc.length).toBe(pa.length);
  for (let i = 0; i < pa.length; i++) {
    const [k, v] = pa[i]!;
    if (!equalBytes(k, pc[i]![0]) || !equalBytes(v, pc[i]![1])) throw new Error(`pair ${i} differs`);
    const got = vc.get(k);
    if (got === undefined || !equalBytes(got, v)) throw new Error(`get ${toHex(k)} differs`);
    if (indexOf(c.root, latin1(k), c.tree.src).index !== i) throw new Error(`index of ${toHex(k)} differs`);
  }
}

/** The tree of cosmos/iavl export_test.go `setupExportTreeBasic`. */
function basicVersions(): Op[][] {
  const s = (k: string, v: number[]): Op => ["s", b(k), new Uint8Array(v)];
  const d = (k: string): Op => ["d", b(k)];
  return [
    [s("x", [255]), s("z", [255]), s("a", [1]), s("b", [2]), s("c", [3])],
    [d("x"), d("b"), s("c", [255]), s("d", [4])],
    [s("b", [2]), s("c", [3]), s("e", [5]), d("z"), s("abc", [6])],
  ];
}

let large: Built | undefined;

/** The ~50,000-key tree, built once for all tests of this file. */
function largeTree(): Built {
  large ??= buildRoot(largeVersions());
  return large;
}

/** About 50,000 keys over three versions of creates, updates and deletes. */
function largeVersions(): Op[][] {
  const rand = rng(49872768940 % 2 ** 32);
  const live: Uint8Array[] = [];
  const seen = new Set<string>();
  const fresh = (): Uint8Array => {
    for (;;) {
      const k = randomBytes(rand, 4 + Math.floor(rand() * 28));
      const h = toHex(k);
      if (!seen.has(h)) {
        seen.add(h);
        return k;
      }
    }
  };
  const value = (): Uint8Array => randomBytes(rand, Math.floor(rand() * 48));
  const versions: Op[][] = [];
  for (const [creates, updates, deletes] of [
    [30_000, 0, 0],
    [12_000, 5_000, 3_000],
    [11_000, 2_000, 1_000],
  ] as const) {
    const ops: Op[] = [];
    for (let i = 0; i < creates; i++) {
      const k = fresh();
      live.push(k);
      ops.push(["s", k, value()]);
    }
    for (let i = 0; i < updates; i++) ops.push(["s", live[Math.floor(rand() * live.length)]!, value()]);
    for (let i = 0; i < deletes; i++) {
      const j = Math.floor(rand() * live.length);
      const k = live[j]!;
      live[j] = live[live.length - 1]!;
      live.pop();
      ops.push(["d", k]);
    }
    versions.push(ops);
  }
  return versions;
}

describe("exportNodes", () => {
  it("exports the export_test.go tree in cosmos/iavl's order", () => {
    const root = buildRoot(basicVersions());
    const { version } = root;
    // The Mutator-built root is the one Tree commits.
    const tree = Tree.memory();
    for (const ops of basicVersions()) {
      for (const op of ops) if (op[0] === "s") tree.set(op[1], op[2]); else tree.remove(op[1]);
      tree.commit();
    }
    expect(toHex(rootHash(root))).toBe(toHex(tree.hash));
    expect(version).toBe(3);

    const got = exportAll(root).map((n) => `${Buffer.from(n.key).toString()}:v${n.version}:h${n.height}`);
    expect(got).toEqual([
      "a:v1:h0", "abc:v3:h0", "abc:v3:h1", "b:v3:h0", "c:v3:h0", "c:v3:h1", "b:v3:h2", "d:v2:h0", "e:v3:h0",
      "e:v3:h1", "d:v3:h3",
    ]);
    const values = exportAll(root).map((n) => (n.value === undefined ? null : [...n.value]));
    expect(values).toEqual([[1], [6], null, [2], [3], null, null, [4], [5], null, null]);
  });

  it("exports nothing for an empty tree, and an empty stream imports as the empty tree", () => {
    expect(exportAll(adopted(undefined, 1))).toEqual([]);
    expect(buildTree([], { version: 1, expectedHash: EMPTY_HASH })).toBeUndefined();
  });

  it("walks without recursion: a deep tree exports as many items as it has nodes", () => {
    const root = buildRoot([Array.from({ length: 4096 }, (_, i): Op => ["s", b(`k${String(i).padStart(6, "0")}`), b("v")])]);
    expect(exportAll(root).length).toBe(2 * 4096 - 1);
  });
});

describe("export of a stored version", () => {
  it("derives each stored branch's key and height as the tree holds them, across checkpoints, removals and reopen", () => {
    const dir = tempDir();
    const s = Tree.open(dir, { checkpointInterval: 2 });
    const m = Tree.memory();
    const next = rng(7);
    const keys: Uint8Array[] = [];
    for (let v = 1; v <= 9; v++) {
      for (let i = 0; i < 300; i++) {
        // Removals of existing keys change branch keys (the first key of a right subtree); sets add and update.
        if (keys.length > 50 && next() < 0.3) {
          const k = keys.splice(Math.floor(next() * keys.length), 1)[0]!;
          s.remove(k);
          m.remove(k);
        } else {
          const k = next() < 0.2 && keys.length > 0 ? keys[Math.floor(next() * keys.length)]! : randomBytes(next, 1 + Math.floor(next() * 6));
          if (!keys.some((x) => toHex(x) === toHex(k))) keys.push(k);
          const value = randomBytes(next, 4);
          s.set(k, value);
          m.set(k, value);
        }
      }
      s.commit();
      m.commit();
    }
    s.close();
    const r = Tree.openReadOnly(dir);
    const line = (n: ExportNode): string => `${toHex(n.key)}:${n.version}:${n.height}:${n.value === undefined ? "" : toHex(n.value)}`;
    try {
      for (const v of [4, 7, 9]) expect([...r.at(v).export()].map(line)).toEqual([...m.at(v).export()].map(line));
    } finally {
      r.close();
    }
  });
});

describe("Importer round trip", () => {
  it("rebuilds the export_test.go tree, also at a later target version (root version < target, as Go allows)", () => {
    const root = buildRoot(basicVersions());
    const { version } = root;
    const copy = buildTree(exportAll(root), { version });
    expectSameReads(root, adopted(copy, version));
    const later = buildTree(exportAll(root), { version: version + 5 });
    expect(toHex(rootHash(later))).toBe(toHex(rootHash(root)));
    // The rebuilt tree exports the same stream again.
    expect(exportAll(adopted(copy, version))).toEqual(exportAll(root));
  });

  it("rebuilds the TestTreeHash tree with its root hash, size and every read", () => {
    const ops = treehashOps();
    const root = buildRoot(ops.map((v) => v.ops));
    const { version } = root;
    const last = ops[ops.length - 1]!;
    expect(toHex(rootHash(root))).toBe(last.expectHash);
    const copy = buildTree(exportAll(root), { version, expectedHash: rootHash(root) });
    expect(copy?.size).toBe(last.sizeAfter);
    expectSameReads(root, adopted(copy, version));
  });

  it("rebuilds a 50,000-key tree; streaming with retain: false hands out every node in post-order", () => {
    const root = largeTree();
    const { version } = root;
    const nodes = exportAll(root);
    expect(sizeOf(root)).toBeGreaterThan(45_000);
    expect(nodes.length).toBe(2 * sizeOf(root) - 1);

    const copy = buildTree(nodes, { version });
    expectSameReads(root, adopted(copy, version));

    // Streaming: batches arrive children-first; after finish nothing holds the tree any more.
    const batchSizes: number[] = [];
    const seen = new Set<ImportedNode>();
    let ordered = true;
    const imp = new Importer({
      version,
      batchSize: 4096,
      retain: false,
      onNodes: (batch) => {
        batchSizes.push(batch.length);
        for (const n of batch) {
          if (n.height > 0 && (!seen.has(n.left!) || !seen.has(n.right!))) ordered = false;
          seen.add(n);
        }
      },
    });
    for (const n of nodes) imp.add(n);
    const shell = imp.finish()!;
    expect(ordered).toBe(true);
    expect(seen.size).toBe(nodes.length);
    expect(Math.max(...batchSizes)).toBe(4096);
    expect(batchSizes.reduce((x, y) => x + y, 0)).toBe(nodes.length);
    expect(toHex(digestBytes(shell.hash))).toBe(toHex(rootHash(root)));
    expect(shell.size).toBe(sizeOf(root));
    expect(shell.left).toBeUndefined();
    for (const n of seen) if (n.left !== undefined || n.right !== undefined) throw new Error("a child reference was kept");
  });

  it("without onNodes, retain: false never links children at all", () => {
    const root = buildRoot(treehashOps().map((v) => v.ops));
    const { version } = root;
    const bare = buildTree(exportAll(root), { version, retain: false })!;
    expect(toHex(digestBytes(bare.hash))).toBe(toHex(rootHash(root)));
    expect(bare.left).toBeUndefined();
  });

  it("checks its options and refuses to be used after finish", () => {
    const bad = [{ version: -1 }, { version: 1.5 }, { version: 1, batchSize: 0 }, { version: 1, maxHeight: 200 }, { version: 1, nope: 1 }];
    for (const o of bad) {
      try {
        new Importer(o as unknown as { version: number });
        throw new Error("accepted");
      } catch (e) {
        expect(e).toBeInstanceOf(IavlError);
        expect((e as IavlError).code).toBe("INVALID_OPTIONS");
      }
    }
    const imp = new Importer({ version: 1 });
    imp.add({ key: b("a"), value: b("1"), version: 1, height: 0 });
    imp.finish();
    expect(() => imp.add({ key: b("b"), value: b("1"), version: 1, height: 0 })).toThrow(IavlError);
  });
});

describe("Importer refusals", () => {
  const leaf = (k: string, v = 1): ExportNode => ({ key: b(k), value: b("v"), version: v, height: 0 });
  const inner = (k: string, h: number, v = 1): ExportNode => ({ key: b(k), version: v, height: h });
  const refuse = (nodes: ExportNode[], rule: RegExp, version = 3): void => {
    let err: unknown;
    try {
      buildTree(nodes, { version });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(IavlError);
    expect((err as IavlError).code).toBe("INVALID_SNAPSHOT");
    expect((err as IavlError).message).toMatch(rule);
  };

  it("names the item and the rule", () => {
    refuse([leaf("a"), leaf("b"), inner("a", 1)], /item 2 .*smallest key of its right subtree, 0x62/);
    refuse([leaf("b"), leaf("a"), inner("a", 1)], /item 1 .*increase strictly/);
    refuse([leaf("a"), leaf("a"), inner("a", 1)], /item 1 .*increase strictly/);
    refuse([leaf("a"), inner("a", 1)], /item 1 .*two completed children/);
    refuse([leaf("a"), leaf("b"), inner("b", 2)], /item 2 .*height must be 1 \+ max/);
    refuse([leaf("a", 2), leaf("b"), inner("b", 1, 1)], /item 2 .*older than a child/);
    refuse([leaf("a", 4)], /item 0 .*newer than the imported version 3/);
    refuse([leaf("a", 0)], /item 0 .*integer ≥ 1/);
    refuse([{ key: b("a"), version: 1, height: 0 }], /item 0 .*needs a value/);
    refuse([leaf("a"), leaf("b"), { ...inner("b", 1), value: new Uint8Array(0) }], /item 2 .*must not carry a value/);
    refuse([{ key: new Uint8Array(0), value: b("v"), version: 1, height: 0 }], /item 0 .*must not be empty/);
    refuse([leaf("a"), leaf("b")], /end of snapshot after 2 items: 2 subtrees/);
    // Left subtree of height 2 against a leaf: balanced heights but not an AVL tree.
    refuse([leaf("a"), leaf("b"), inner("b", 1), leaf("c"), inner("c", 2), leaf("d"), inner("d", 3)], /item 6 .*not an AVL/);
    refuse([leaf("a"), { key: b("b"), value: b("v"), version: 1, height: 200 }], /item 1 .*height must be an integer/);
  });

  it("applies the configured limits and the expected hash", () => {
    expect(() => buildTree([{ key: new Uint8Array(9), value: b("v"), version: 1, height: 0 }], { version: 1, maxKeyLength: 8 })).toThrow(
      /key of 9 bytes exceeds the limit of 8/,
    );
    expect(() => buildTree([{ key: b("k"), value: new Uint8Array(9), version: 1, height: 0 }], { version: 1, maxValueLength: 8 })).toThrow(
      /value of 9 bytes exceeds the limit of 8/,
    );
    expect(() => buildTree([leaf("a")], { version: 1, expectedHash: EMPTY_HASH })).toThrow(/root hash .* differs/);
    // A flood of leaves with no parents is refused once no tree of the allowed height could hold it.
    const flood = Array.from({ length: 50 }, (_, i) => leaf(`k${String(i).padStart(3, "0")}`));
    expect(() => buildTree(flood, { version: 3, maxHeight: 20 })).toThrow(/item 21 .*more than 21 subtrees pending/);
  });

  it("refuses every later call once it has refused", () => {
    const imp = new Importer({ version: 1 });
    expect(() => imp.add(leaf("a", 2))).toThrow(IavlError);
    expect(() => imp.add(leaf("b"))).toThrow(/already refused/);
    expect(() => imp.finish()).toThrow(/already refused/);
  });
});

describe("wire format", () => {
  it("encodes byte for byte as gogoproto: defaults omitted, uvarint length prefix", () => {
    const root = buildRoot(basicVersions());
    const items = [...encodeItems(exportAll(root))].map(toHex);
    expect(items[0]).toBe("080a01611201011801"); // a = [1] at v1, height 0 omitted
    expect(items[2]).toBe("090a036162631803" + "2001"); // inner abc, v3, h1, no value
    // An empty leaf value is absent on the wire and comes back as an empty value.
    const empty: ExportNode = { key: b("k"), value: new Uint8Array(0), version: 2, height: 0 };
    const [bytes] = [...encodeItems([empty])];
    expect(toHex(bytes!)).toBe("050a016b1802");
  });

  it("round trips the 50,000-key tree through random chunk boundaries", async () => {
    const root = largeTree();
    const { version } = root;
    const nodes = exportAll(root);
    const bytes = concatBytes(...encodeItems(nodes));
    const decoded = await collect(decodeItems(randomChunks(bytes, rng(7))));
    expect(decoded.length).toBe(nodes.length);
    for (let i = 0; i < nodes.length; i++) {
      const a = nodes[i]!;
      const d = decoded[i]!;
      const same =
        equalBytes(a.key, d.key) &&
        a.version === d.version &&
        a.height === d.height &&
        (a.value === undefined ? d.value === undefined : d.value !== undefined && equalBytes(a.value, d.value));
      if (!same) throw new Error(`item ${i} differs after the wire round trip`);
    }
    const copy = buildTree(decoded, { version, expectedHash: rootHash(root) });
    expect(copy?.size).toBe(sizeOf(root));
  });

  it("round trips the TestTreeHash tree and its decoded keys do not alias the chunks", async () => {
    const root = buildRoot(treehashOps().map((v) => v.ops));
    const { version } = root;
    const bytes = concatBytes(...encodeItems(exportAll(root)));
    const chunks = [...randomChunks(bytes, rng(9))];
    const decoded = await collect(decodeItems(chunks));
    for (const c of chunks) c.fill(0);
    const copy = buildTree(decoded, { version });
    expectSameReads(root, adopted(copy, version));
    // And straight from the decoder into the importer.
    const streamed = await buildTreeAsync(decodeItems(randomChunks(bytes, rng(8))), { version });
    expect(toHex(rootHash(streamed))).toBe(toHex(rootHash(root)));
  });

  it("round trips the wrapped SnapshotItem form", async () => {
    const root = buildRoot(basicVersions());
    const nodes = exportAll(root);
    const bytes = concatBytes(...encodeSnapshotItems([{ name: "bank", nodes }, { name: "empty", nodes: [] }]));
    const items = await collect(decodeSnapshotItems(randomChunks(bytes, rng(10))));
    const expected: SnapshotItem[] = [
      { kind: "store", name: "bank" },
      ...nodes.map((node): SnapshotItem => ({ kind: "iavl", node })),
      { kind: "store", name: "empty" },
    ];
    expect(items).toEqual(expected);
  });

  it("refuses an oversized item before buffering it", async () => {
    // A prefix claiming 2^40 bytes, then a stream that never ends: a decoder that waited for the body would hang.
    async function* hostile(): AsyncGenerator<Uint8Array> {
      yield new Uint8Array([0x80, 0x80, 0x80, 0x80, 0x80, 0x20]);
      await new Promise<never>(() => {});
    }
    await expect(collect(decodeItems(hostile()))).rejects.toThrow(/item 0 at byte 0: length .* exceeds the limit/);
    const ok = concatBytes(...encodeItems([{ key: b("k"), value: new Uint8Array(100), version: 1, height: 0 }]));
    await expect(collect(decodeItems([ok], { maxItemBytes: 50 }))).rejects.toThrow(/exceeds the limit of 50/);
  });

  it("refuses truncation, malformed protobuf and out-of-range numbers with INVALID_SNAPSHOT", async () => {
    const codeOf = async (chunks: Uint8Array[]): Promise<string> => {
      try {
        await collect(decodeItems(chunks));
        return "accepted";
      } catch (e) {
        return e instanceof IavlError ? e.code : `other: ${String(e)}`;
      }
    };
    const item = [...encodeItems([{ key: b("k"), value: b("v"), version: 1, height: 0 }])][0]!;
    expect(await codeOf([item.subarray(0, item.length - 1)])).toBe("INVALID_SNAPSHOT"); // truncated body
    expect(await codeOf([new Uint8Array([0x85])])).toBe("INVALID_SNAPSHOT"); // truncated prefix
    expect(await codeOf([new Uint8Array([0x02, 0x0f, 0x01])])).toBe("INVALID_SNAPSHOT"); // wire type 7
    expect(await codeOf([new Uint8Array([0x03, 0x0a, 0x05, 0x01])])).toBe("INVALID_SNAPSHOT"); // bytes overrun
    // Wire types protobufjs would read past but gogoproto refuses: version sent as fixed64, field number 0.
    expect(await codeOf([new Uint8Array([0x0c, 0x0a, 0x01, 0x61, 0x19, 1, 0, 0, 0, 0, 0, 0, 0])])).toBe("INVALID_SNAPSHOT");
    expect(await codeOf([new Uint8Array([0x02, 0x00, 0x00])])).toBe("INVALID_SNAPSHOT");
    // An unknown field is skipped, as protobuf requires.
    expect(await codeOf([new Uint8Array([0x05, 0x0a, 0x01, 0x61, 0x28, 0x07])])).toBe("accepted");
    // version = -1 (int64, ten-byte varint)
    expect(await codeOf([new Uint8Array([0x0b, 0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])])).toBe(
      "INVALID_SNAPSHOT",
    );
    // version = 2^62
    expect(await codeOf([new Uint8Array([0x0a, 0x18, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40])])).toBe(
      "INVALID_SNAPSHOT",
    );
    expect(await codeOf([new Uint8Array([0x03, 0x20, 0x80, 0x01])])).toBe("INVALID_SNAPSHOT"); // height 128
    expect(await codeOf([new Uint8Array([0x0b, 0x20, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])])).toBe(
      "INVALID_SNAPSHOT",
    ); // height -1
    expect(await codeOf([])).toBe("accepted");
  });
});
