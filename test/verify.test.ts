/**
 * `iavlite/verify` (src/verify) against the proofs the store makes, the cosmos/ics23 IAVL vectors, app-level proofs
 * of MultiTree stores, and inputs it must refuse without throwing. The differential fuzz against `@confio/ics23` is
 * in verify-fuzz.test.ts; the browser-safety checks in verify-browser.test.ts.
 */
import { runInNewContext } from "node:vm";
import { ics23, iavlSpec, tendermintSpec, verifyMembership as jsMembership, verifyNonMembership as jsNonMembership } from "@confio/ics23";
import { calculateExistenceRoot } from "@confio/ics23/build/proofs.js";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MultiTree, Tree, toHex, type CommitmentProof } from "../src/index.js";
import { compareBytes } from "../src/base/bytes.js";
import { utf8 } from "../src/verify/bytes.js";
import { verifyMembership, verifyNonMembership, verifyStoreInApp } from "../src/verify/index.js";
import { appProofs } from "./app-proof.js";
import { tempDir } from "./backends.js";
import { b, cpuMs, hex, randomBytes, readVector, rng, treehashOps } from "./helpers.js";

const encode = (p: CommitmentProof): Uint8Array => ics23.CommitmentProof.encode(p).finish();
const cat = (x: Uint8Array, y: Uint8Array): Uint8Array => Uint8Array.from([...x, ...y]);
const flipped = (x: Uint8Array, i = x.length - 1): Uint8Array => {
  const c = Uint8Array.from(x);
  c[i] = c[i]! ^ 1;
  return c;
};

/** One committed version: its root and its entries sorted by key. */
interface Version {
  version: number;
  hash: Uint8Array;
  entries: Array<[Uint8Array, Uint8Array]>;
}

/** The keys absent from `entries` a non-membership proof must cover: before the first, after the last, every gap. */
function absentKeys(entries: Array<[Uint8Array, Uint8Array]>, next: () => number): Uint8Array[] {
  const present = new Set(entries.map(([k]) => toHex(k)));
  const first = entries[0]![0];
  const last = entries[entries.length - 1]![0];
  const keys: Uint8Array[] = [new Uint8Array([0]), first.slice(0, -1), cat(last, new Uint8Array([0])), new Uint8Array([0xff, 0xff, 0xff])];
  for (let i = 0; i < entries.length - 1; i++) keys.push(cat(entries[i]![0], new Uint8Array([0])));
  for (let i = 0; i < 40; i++) keys.push(randomBytes(next, 1 + Math.floor(next() * 12)));
  return keys.filter((k) => k.length > 0 && !present.has(toHex(k)));
}

/** Three versions of creates, updates and deletes of random keys; returns every version's state. */
function build(tree: Tree, seed: number): Version[] {
  const next = rng(seed);
  const state = new Map<string, [Uint8Array, Uint8Array]>();
  const versions: Version[] = [];
  for (const [creates, updates, deletes] of [
    [150, 0, 0],
    [60, 40, 30],
    [20, 30, 40],
  ] as const) {
    for (let i = 0; i < creates; i++) {
      const k = randomBytes(next, 2 + Math.floor(next() * 10));
      const v = randomBytes(next, 1 + Math.floor(next() * 40));
      state.set(toHex(k), [k, v]);
      tree.set(k, v);
    }
    const live = (): [Uint8Array, Uint8Array] => [...state.values()][Math.floor(next() * state.size)]!;
    for (let i = 0; i < updates; i++) {
      const [k] = live();
      const v = randomBytes(next, 1 + Math.floor(next() * 40));
      state.set(toHex(k), [k, v]);
      tree.set(k, v);
    }
    for (let i = 0; i < deletes; i++) {
      const [k] = live();
      state.delete(toHex(k));
      tree.remove(k);
    }
    const { version, hash } = tree.commit();
    versions.push({ version, hash, entries: [...state.values()].sort((x, y) => compareBytes(x[0], y[0])) });
  }
  return versions;
}

const stores = [
  { name: "memory", make: (): Tree => Tree.memory() },
  { name: "sqlite", make: (): Tree => Tree.open(tempDir(), { checkpointInterval: 2, memoryBudgetMiB: 8 }) },
];

describe.each(stores)("proofs of a $name store", ({ make }) => {
  let tree: Tree;
  let versions: Version[];

  beforeAll(() => {
    tree = make();
    versions = build(tree, 11);
  });
  afterAll(() => tree.close());

  it("accepts every membership proof with its root, key and value, and refuses any one of them changed", () => {
    let checked = 0;
    for (const m of versions) {
      const view = tree.at(m.version);
      for (const [k, v] of m.entries) {
        const proof = encode(view.proof(k));
        expect(verifyMembership(proof, m.hash, k, v)).toBe(true);
        expect(verifyMembership(proof, flipped(m.hash), k, v)).toBe(false);
        expect(verifyMembership(proof, flipped(k), k, v)).toBe(false);
        expect(verifyMembership(proof, m.hash, flipped(k), v)).toBe(false);
        expect(verifyMembership(proof, m.hash, cat(k, new Uint8Array([0])), v)).toBe(false);
        expect(verifyMembership(proof, m.hash, k, flipped(v, 0))).toBe(false);
        expect(verifyMembership(proof, m.hash, k, cat(v, new Uint8Array([0])))).toBe(false);
        expect(verifyMembership(proof, m.hash, k, new Uint8Array(0))).toBe(false);
        // A membership proof is no non-membership proof, of this key or any.
        expect(verifyNonMembership(proof, m.hash, k)).toBe(false);
        expect(verifyNonMembership(proof, m.hash, cat(k, new Uint8Array([0])))).toBe(false);
        for (const other of versions) {
          if (toHex(other.hash) !== toHex(m.hash)) expect(verifyMembership(proof, other.hash, k, v)).toBe(false);
        }
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(400);
  });

  it("accepts every non-membership proof (smallest, largest, between, random, deleted keys) and refuses it changed", () => {
    const next = rng(5);
    let checked = 0;
    for (let i = 0; i < versions.length; i++) {
      const m = versions[i]!;
      const view = tree.at(m.version);
      const live = new Set(m.entries.map(([k]) => toHex(k)));
      const deleted = i > 0 ? versions[i - 1]!.entries.map(([k]) => k).filter((k) => !live.has(toHex(k))) : [];
      if (i > 0) expect(deleted.length).toBeGreaterThan(0);
      for (const key of [...absentKeys(m.entries, next), ...deleted]) {
        const proof = encode(view.proof(key));
        expect(verifyNonMembership(proof, m.hash, key)).toBe(true);
        expect(verifyNonMembership(proof, flipped(m.hash), key)).toBe(false);
        expect(verifyMembership(proof, m.hash, key, b("x"))).toBe(false);
        const n = ics23.CommitmentProof.decode(proof).nonexist!;
        // Neither neighbour, nor a key beyond one, is proven absent.
        if (n.left != null) {
          expect(verifyNonMembership(proof, m.hash, n.left.key!)).toBe(false);
          expect(verifyMembership(proof, m.hash, n.left.key!, n.left.value!)).toBe(false);
        }
        if (n.right != null) {
          expect(verifyNonMembership(proof, m.hash, n.right.key!)).toBe(false);
          expect(verifyNonMembership(proof, m.hash, cat(n.right.key!, new Uint8Array([0])))).toBe(false);
        }
        for (const other of versions) {
          if (toHex(other.hash) !== toHex(m.hash)) expect(verifyNonMembership(proof, other.hash, key)).toBe(false);
        }
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(400);
  });

  it("a single-key tree: membership with an empty path, absence on both sides", () => {
    const t = make();
    t.set(b("m"), b("v"));
    const { hash } = t.commit();
    expect(ics23.CommitmentProof.decode(encode(t.proof(b("m")))).exist!.path).toHaveLength(0);
    expect(verifyMembership(encode(t.proof(b("m"))), hash, b("m"), b("v"))).toBe(true);
    for (const k of ["a", "z", "m\u0000"]) expect(verifyNonMembership(encode(t.proof(b(k))), hash, b(k))).toBe(true);
    t.close();
  });
});

describe("the TestTreeHash tree (4665 keys, paths of 13 to 18 steps)", () => {
  it("accepts every key's proof of the last version and agrees with @confio/ics23", () => {
    const tree = Tree.memory();
    const state = new Map<string, [Uint8Array, Uint8Array]>();
    for (const v of treehashOps()) {
      for (const op of v.ops) {
        if (op[0] === "s") {
          tree.set(op[1], op[2]);
          state.set(toHex(op[1]), [op[1], op[2]]);
        } else {
          tree.remove(op[1]);
          state.delete(toHex(op[1]));
        }
      }
      expect(toHex(tree.commit().hash)).toBe(v.expectHash);
    }
    const root = tree.hash;
    for (const [k, v] of state.values()) {
      const p = tree.proof(k);
      expect(jsMembership(p, iavlSpec, root, k, v)).toBe(true);
      expect(verifyMembership(encode(p), root, k, v)).toBe(true);
    }
  });
});

interface SingleFixture {
  key: string;
  value: string;
  root: string;
  proof: string;
}

describe("cosmos/ics23 testdata/iavl vectors", () => {
  for (const name of ["exist_left", "exist_middle", "exist_right"]) {
    it(`${name} verifies as membership, not with another value or root, nor as non-membership`, () => {
      const f = readVector<SingleFixture>(`ics23-iavl/${name}.json`);
      const [proof, root, key, value] = [hex(f.proof), hex(f.root), hex(f.key), hex(f.value)];
      expect(verifyMembership(proof, root, key, value)).toBe(true);
      expect(verifyMembership(proof, root, key, flipped(value))).toBe(false);
      expect(verifyMembership(proof, flipped(root), key, value)).toBe(false);
      expect(verifyNonMembership(proof, root, key)).toBe(false);
    });
  }

  for (const name of ["nonexist_left", "nonexist_middle", "nonexist_right"]) {
    it(`${name} verifies as non-membership, not with another root, nor as membership`, () => {
      const f = readVector<SingleFixture>(`ics23-iavl/${name}.json`);
      const [proof, root, key] = [hex(f.proof), hex(f.root), hex(f.key)];
      expect(verifyNonMembership(proof, root, key)).toBe(true);
      expect(verifyNonMembership(proof, flipped(root, 0), key)).toBe(false);
      expect(verifyMembership(proof, root, key, b("x"))).toBe(false);
    });
  }

  it("batch proofs are refused (Go's cosmos/ics23 dropped them), though @confio/ics23 accepts them", () => {
    const f = readVector<{ root: string; proof: string; items: Array<{ key: string; value: string }> }>("ics23-iavl/batch_exist.json");
    const [k, v] = [hex(f.items[0]!.key), hex(f.items[0]!.value)];
    expect(jsMembership(ics23.CommitmentProof.decode(hex(f.proof)), iavlSpec, hex(f.root), k, v)).toBe(true);
    expect(verifyMembership(hex(f.proof), hex(f.root), k, v)).toBe(false);
    const g = readVector<{ root: string; proof: string; items: Array<{ key: string }> }>("ics23-iavl/batch_nonexist.json");
    const key = hex(g.items[0]!.key);
    expect(jsNonMembership(ics23.CommitmentProof.decode(hex(g.proof)), iavlSpec, hex(g.root), key)).toBe(true);
    expect(verifyNonMembership(hex(g.proof), hex(g.root), key)).toBe(false);
  });
});

describe("app-level proofs of MultiTree stores", () => {
  const enc = new TextEncoder();

  it.each([1, 2, 3, 4, 5, 6])("%i stores: every store's hash verifies in the app hash, and nothing tampered does", (count) => {
    const names = ["acc", "bank", "distribution", "gov", "ibc", "staking"].slice(0, count);
    const app = MultiTree.open(tempDir(), { stores: names });
    const next = rng(count);
    try {
      for (let v = 0; v < 2; v++) {
        for (const n of names) for (let i = 0; i < 20; i++) app.tree(n).set(randomBytes(next, 4), randomBytes(next, 8));
        const { hashes, appHash, version } = app.commit();
        const { appHash: generated, proofs } = appProofs(hashes);
        expect(toHex(generated)).toBe(toHex(appHash));
        for (const name of names) {
          const storeHash = hashes.get(name)!;
          const p = proofs.get(name)!;
          expect(jsMembership(p, tendermintSpec, appHash, enc.encode(name), storeHash)).toBe(true);
          const wire = encode(p);
          expect(verifyStoreInApp(wire, appHash, name, storeHash)).toBe(true);
          // The two levels together: a key of the store, then the store in the app.
          const [k] = [...app.tree(name).at(version).iterate()][0]!;
          const kv = app.tree(name).at(version).get(k)!;
          expect(verifyMembership(encode(app.tree(name).at(version).proof(k)), storeHash, k, kv)).toBe(true);

          expect(verifyStoreInApp(wire, flipped(appHash), name, storeHash)).toBe(false);
          expect(verifyStoreInApp(wire, appHash, name, flipped(storeHash))).toBe(false);
          expect(verifyStoreInApp(wire, appHash, `${name}x`, storeHash)).toBe(false);
          expect(verifyStoreInApp(wire, appHash, name.toUpperCase(), storeHash)).toBe(false);
          // The store proof of an app is no IAVL proof.
          expect(verifyMembership(wire, appHash, enc.encode(name), storeHash)).toBe(false);
          for (const other of names) {
            if (other === name) continue;
            expect(verifyStoreInApp(wire, appHash, other, hashes.get(other)!)).toBe(false);
            expect(verifyStoreInApp(encode(proofs.get(other)!), appHash, name, storeHash)).toBe(false);
          }
          const steps = p.exist!.path!;
          for (let s = 0; s < steps.length; s++) {
            const op = steps[s]!;
            const sibling = op.suffix != null && op.suffix.length > 0 ? "suffix" : "prefix";
            const bent = steps.map((o, j) => (j === s ? { ...o, [sibling]: flipped(o[sibling]!) } : o));
            expect(verifyStoreInApp(encode({ exist: { ...p.exist, path: bent } }), appHash, name, storeHash)).toBe(false);
            const short = steps.filter((_, j) => j !== s);
            expect(verifyStoreInApp(encode({ exist: { ...p.exist, path: short } }), appHash, name, storeHash)).toBe(false);
          }
          // A leaf prefix longer than 0x00: refused on purpose (both reference verifiers would only check its first byte).
          const longLeaf = { exist: { ...p.exist, leaf: { ...p.exist!.leaf, prefix: Uint8Array.of(0, 0) } } };
          expect(verifyStoreInApp(encode(longLeaf), appHash, name, storeHash)).toBe(false);
        }
      }
    } finally {
      app.close();
    }
  });

  it("a leaf prefix longer than 0x00 would prove a name hidden inside another store's name: refused, unlike both references", () => {
    // The store "x\u0003abc" has leaf preimage 0x00 ‖ 0x05 ‖ "x" ‖ 0x03 ‖ "abc" ‖ 0x20 ‖ sha256(hash). Read with the
    // prefix 0x00 0x05 "x", the same bytes are the leaf of a store "abc" with the same hash, which does not exist.
    const hash = new Uint8Array(32).fill(3);
    const { appHash, proofs } = appProofs(new Map([["x\u0003abc", hash], ["bank", new Uint8Array(32).fill(4)]]));
    const real = proofs.get("x\u0003abc")!;
    expect(verifyStoreInApp(encode(real), appHash, "x\u0003abc", hash)).toBe(true);
    const leaf = { ...real.exist!.leaf, prefix: Uint8Array.of(0, 5, 0x78) };
    const forged = { exist: { ...real.exist, key: enc.encode("abc"), leaf } };
    expect(jsMembership(forged, tendermintSpec, appHash, enc.encode("abc"), hash)).toBe(true);
    expect(verifyStoreInApp(encode(forged), appHash, "abc", hash)).toBe(false);
  });

  it("a store name with a lone surrogate has no UTF-8 form and is refused", () => {
    const { appHash, proofs } = appProofs(new Map([["\ud800", new Uint8Array(32).fill(7)], ["bank", new Uint8Array(32).fill(8)]]));
    // TextEncoder writes U+FFFD for the lone surrogate, so the generated proof is of "\ufffd".
    const p = encode(proofs.get("\ud800")!);
    expect(verifyStoreInApp(p, appHash, "\ufffd", new Uint8Array(32).fill(7))).toBe(true);
    expect(verifyStoreInApp(p, appHash, "\ud800", new Uint8Array(32).fill(7))).toBe(false);
  });
});

describe("where @confio/ics23 and Go's rules disagree, the verifier sides with the stricter", () => {
  // Each case changes a valid proof and computes the root it now hashes to, so that only the rules can refuse it.
  const t = Tree.memory();
  for (let i = 0; i < 40; i++) t.set(b(`key-${i}`), b(`value-${i}`));
  t.commit();
  const key = b("key-17");
  const base = (): ics23.IExistenceProof => ics23.CommitmentProof.decode(encode(t.proof(key))).exist!;
  const refused = (e: ics23.IExistenceProof): void => {
    const root = calculateExistenceRoot(e);
    expect(jsMembership({ exist: e }, iavlSpec, root, e.key!, e.value!)).toBe(true);
    expect(verifyMembership(encode({ exist: e }), root, e.key!, e.value!)).toBe(false);
  };

  it("leaf prefix: a byte after the three varints, size 2, version -1 (validateIavlOps)", () => {
    for (const prefix of [[0, 2, 2, 0], [0, 4, 2], [0, 2, 1]]) {
      refused({ ...base(), leaf: { ...base().leaf, prefix: Uint8Array.from(prefix) } });
    }
  });

  it("inner ops: a height below the layer, 2 bytes after the header, a suffix of 34 bytes", () => {
    const e = base();
    expect(e.path!.length).toBeGreaterThanOrEqual(3);
    const at = (i: number, op: ics23.IInnerOp): ics23.IExistenceProof => ({ ...e, path: e.path!.map((o, j) => (j === i ? op : o)) });
    const top = e.path!.length - 1;
    const op = e.path![top]!;
    // The top op's header with height 1 (zig-zag 0x02), below its layer.
    const rest = op.prefix!.slice(3);
    refused(at(top, { ...op, prefix: Uint8Array.from([0x02, ...op.prefix!.slice(1, 3), ...rest]) }));
    refused(at(top, { ...op, prefix: Uint8Array.from([...op.prefix!, 0x20]) }));
    refused(at(top, { ...op, suffix: Uint8Array.from([...(op.suffix ?? []), 0x20]) }));
  });

  it("a path of 129 steps (Go's default max depth is 128; the JS verifier has none)", () => {
    const e = base();
    const top = e.path![e.path!.length - 1]!;
    const path = [...e.path!];
    // Heights above every layer, so only the depth breaks a rule.
    while (path.length < 129) path.push({ ...top, prefix: Uint8Array.from([0xfe, 0x03, ...top.prefix!.slice(1)]) });
    refused({ ...e, path });
  });

  it("app level: an inner prefix equal to the leaf prefix 0x00, and a suffix field present after a 33-byte prefix", () => {
    const stores = new Map(["acc", "bank", "gov"].map((name, i) => [name, new Uint8Array(32).fill(i + 1)] as const));
    const { proofs } = appProofs(stores);
    const enc = new TextEncoder();
    const check = (name: string, change: (path: ics23.IInnerOp[]) => ics23.IInnerOp[]): void => {
      const e = proofs.get(name)!.exist!;
      const bent = { ...e, path: change(e.path!) };
      const root = calculateExistenceRoot(bent);
      expect(jsMembership({ exist: bent }, tendermintSpec, root, enc.encode(name), stores.get(name)!)).toBe(true);
      expect(verifyStoreInApp(encode({ exist: bent }), root, name, stores.get(name)!)).toBe(false);
    };
    // "acc" is the leftmost store: its steps have prefix 0x01 and a suffix. @confio/ics23's leaf-prefix check misses a
    // prefix that equals the leaf prefix outright; Go's bytes.HasPrefix does not.
    check("acc", (path) => path.map((op, i) => (i === 0 ? { ...op, prefix: Uint8Array.of(0) } : op)));
    // "gov" is a right child at the top: a 33-byte prefix, and no suffix field. Go's validateTendermintOps refuses an
    // empty suffix field that is present.
    check("gov", (path) => path.map((op) => (op.prefix!.length === 33 ? { ...op, suffix: new Uint8Array(0) } : op)));
  });

  it("non-existence over a tree whose leaves are out of order: the parting steps must be left then right", () => {
    // Not an IAVL tree anyone honest builds: the root's left child is the leaf of "z", its right child that of "a".
    const leaf = (k: string, v: string): ics23.IExistenceProof => ({ key: b(k), value: b(v), leaf: base().leaf, path: [] });
    const hz = calculateExistenceRoot(leaf("z", "1"));
    const ha = calculateExistenceRoot(leaf("a", "2"));
    const hdr = [0x02, 0x04, 0x02]; // height 1, size 2, version 1
    const sha = ics23.HashOp.SHA256;
    const z = { ...leaf("z", "1"), path: [{ hash: sha, prefix: Uint8Array.from([...hdr, 0x20]), suffix: Uint8Array.from([0x20, ...ha]) }] };
    const a = { ...leaf("a", "2"), path: [{ hash: sha, prefix: Uint8Array.from([...hdr, 0x20, ...hz, 0x20]) }] };
    const root = calculateExistenceRoot(z);
    expect(toHex(calculateExistenceRoot(a))).toBe(toHex(root));
    expect(verifyMembership(encode({ exist: a }), root, b("a"), b("2"))).toBe(true);
    const p = { nonexist: { key: b("m"), left: a, right: z } };
    expect(jsNonMembership(p, iavlSpec, root, b("m"))).toBe(false);
    expect(verifyNonMembership(encode(p), root, b("m"))).toBe(false);
  });
});

describe("inputs the verifier must refuse without throwing", () => {
  const t = Tree.memory();
  for (let i = 0; i < 50; i++) t.set(b(`key-${i}`), b(`value-${i}`));
  const root = t.commit().hash;
  const proof = encode(t.proof(b("key-7")));
  const absent = encode(t.proof(b("key-7a")));
  const { appHash, proofs } = appProofs(new Map([["bank", root]]));
  const appProof = encode(proofs.get("bank")!);
  const throwing = new Proxy(new Uint8Array(4), {
    get() {
      throw new Error("boom");
    },
    getPrototypeOf() {
      throw new Error("boom");
    },
  });
  const bad: unknown[] = [
    undefined,
    null,
    0,
    "proof",
    {},
    [1, 2, 3],
    new ArrayBuffer(8),
    new DataView(new ArrayBuffer(8)),
    new Uint16Array(4),
    new Int8Array(4),
    new Uint8ClampedArray(4),
    { length: 4, 0: 1, 1: 2 },
    throwing,
    Symbol("x"),
    () => proof,
  ];

  it("arguments of the wrong type, in any position", () => {
    const args = { proof, root, key: b("key-7"), value: b("value-7") };
    expect(verifyMembership(args.proof, args.root, args.key, args.value)).toBe(true);
    expect(verifyNonMembership(absent, root, b("key-7a"))).toBe(true);
    expect(verifyStoreInApp(appProof, appHash, "bank", root)).toBe(true);
    const call = (f: (...a: never[]) => boolean, a: unknown[]): boolean => (f as unknown as (...x: unknown[]) => boolean)(...a);
    for (const x of bad) {
      for (let i = 0; i < 4; i++) {
        const m = [proof, root, b("key-7"), b("value-7")];
        m[i] = x as Uint8Array;
        expect(call(verifyMembership, m)).toBe(false);
        const s = [appProof, appHash, "bank", root] as unknown[];
        s[i] = x;
        expect(call(verifyStoreInApp, s)).toBe(false);
      }
      for (let i = 0; i < 3; i++) {
        const n = [absent, root, b("key-7a")] as unknown[];
        n[i] = x;
        expect(call(verifyNonMembership, n)).toBe(false);
      }
    }
    expect(call(verifyMembership, [])).toBe(false);
    expect(call(verifyStoreInApp, [appProof, appHash, new String("bank"), root])).toBe(false);
  });

  it("Uint8Arrays of another realm and Buffers are bytes like any other", () => {
    const foreign = (x: Uint8Array): Uint8Array => runInNewContext("Uint8Array.from(a)", { a: [...x] }) as Uint8Array;
    expect(foreign(root) instanceof Uint8Array).toBe(false);
    expect(verifyMembership(foreign(proof), foreign(root), foreign(b("key-7")), foreign(b("value-7")))).toBe(true);
    expect(verifyMembership(Buffer.from(proof), Buffer.from(root), Buffer.from("key-7"), Buffer.from("value-7"))).toBe(true);
    expect(verifyStoreInApp(foreign(appProof), foreign(appHash), "bank", foreign(root))).toBe(true);
  });

  it("huge claimed lengths, long paths, empty and truncated proofs", () => {
    // A CommitmentProof whose exist field claims 2^62 bytes.
    const huge = Uint8Array.of(0x0a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40);
    expect(verifyMembership(huge, root, b("key-7"), b("value-7"))).toBe(false);
    // An 11-byte varint, and a tenth byte past bit 63.
    expect(verifyMembership(Uint8Array.of(0x0a, ...new Array<number>(10).fill(0xff), 0x01), root, b("k"), b("v"))).toBe(false);
    expect(verifyMembership(Uint8Array.of(0x0a, ...new Array<number>(9).fill(0xff), 0x02), root, b("k"), b("v"))).toBe(false);
    expect(verifyMembership(new Uint8Array(0), root, b("key-7"), b("value-7"))).toBe(false);
    for (let n = 0; n < proof.length; n++) {
      expect(verifyMembership(proof.subarray(0, n), root, b("key-7"), b("value-7"))).toBe(false);
    }
    // 129 inner ops: more than any spec allows (Go's default max depth), refused while decoding.
    const p = ics23.CommitmentProof.decode(proof);
    const top = p.exist!.path![p.exist!.path!.length - 1]!;
    const long = encode({ exist: { ...p.exist, path: [...p.exist!.path!, ...new Array<ics23.IInnerOp>(129).fill(top)] } });
    expect(verifyMembership(long, root, b("key-7"), b("value-7"))).toBe(false);
    // Megabytes of noise: refused, and quickly (in CPU time: a busy machine's other processes do not count).
    const noise = randomBytes(rng(1), 4 << 20);
    const t0 = cpuMs();
    expect(verifyMembership(noise, root, b("key-7"), b("value-7"))).toBe(false);
    expect(verifyNonMembership(noise, root, b("key-7"))).toBe(false);
    expect(cpuMs() - t0).toBeLessThan(2000);
  });

  it("a proof with two members of its oneof, or a field twice, is refused (protobufjs and Go read them differently)", () => {
    const exist = ics23.CommitmentProof.decode(proof).exist!;
    const both = encode({ exist, nonexist: ics23.CommitmentProof.decode(absent).nonexist! });
    expect(verifyMembership(both, root, b("key-7"), b("value-7"))).toBe(false);
    expect(verifyNonMembership(both, root, b("key-7a"))).toBe(false);
    // The exist field written twice (protobufjs keeps the second, Go merges the two).
    expect(verifyMembership(cat(proof, proof), root, b("key-7"), b("value-7"))).toBe(false);
    // An unknown field is skipped, as protobuf requires.
    expect(verifyMembership(cat(proof, Uint8Array.of(0x50, 0x01)), root, b("key-7"), b("value-7"))).toBe(true);
  });
});

describe("utf8 (store names)", () => {
  it("equals TextEncoder on well-formed strings and refuses lone surrogates", () => {
    const enc = new TextEncoder();
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 24 }), (units) => {
        const s = String.fromCharCode(...units);
        const mine = utf8(s);
        if (s.isWellFormed()) expect(toHex(mine!)).toBe(toHex(enc.encode(s)));
        else expect(mine).toBeUndefined();
      }),
      { seed: 7, numRuns: 2000 },
    );
    expect(toHex(utf8("a\u00e9\u20ac\u{1f600}")!)).toBe(toHex(enc.encode("a\u00e9\u20ac\u{1f600}")));
  });
});
