import { ics23, iavlSpec, verifyMembership, verifyNonMembership } from "@confio/ics23";
import { batchVerifyMembership, batchVerifyNonMembership } from "@confio/ics23/build/ics23.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IavlError, toHex, type CommitmentProof, type ReadonlyTree, type Tree } from "../src/index.js";
import { compareBytes } from "../src/base/bytes.js";
import { backends } from "./backends.js";
import { b, hex, randomBytes, readVector, rng, treehashOps } from "./helpers.js";
import { checkIavlOps, checkProof, GO_DEFAULT_MAX_DEPTH } from "./ics23-rules.js";

function concatBytes(a: Uint8Array, c: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + c.length);
  out.set(a, 0);
  out.set(c, a.length);
  return out;
}

function expectIavlError(f: () => unknown, code: string): void {
  let caught: unknown;
  try {
    f();
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(IavlError);
  expect((caught as IavlError).code).toBe(code);
}

/** The IavlError `f` throws. */
function errorOf(f: () => unknown): IavlError {
  try {
    f();
  } catch (e) {
    if (e instanceof IavlError) return e;
    throw e;
  }
  throw new Error("nothing was thrown");
}

/** The committed state of one version of the TestTreeHash ops, sorted by key. */
interface VersionModel {
  version: number;
  hash: Uint8Array;
  entries: Array<[Uint8Array, Uint8Array]>;
  byHex: Map<string, Uint8Array>;
}

/** Index of the first entry whose key is ≥ `key` (the insertion index). */
function lowerBound(entries: Array<[Uint8Array, Uint8Array]>, key: Uint8Array): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (compareBytes(entries[mid]![0], key) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function existProof(p: CommitmentProof): ics23.IExistenceProof {
  expect(p.exist).toBeTruthy();
  expect(p.nonexist ?? undefined).toBeUndefined();
  return p.exist!;
}

function nonexistProof(p: CommitmentProof): ics23.INonExistenceProof {
  expect(p.nonexist).toBeTruthy();
  expect(p.exist ?? undefined).toBeUndefined();
  return p.nonexist!;
}

/** Checks an absence proof of `key` in `m` against `root`: it verifies, passes Go's rules, and names the right neighbours. */
function checkAbsent(view: ReadonlyTree, m: VersionModel, key: Uint8Array): void {
  expect(m.byHex.has(toHex(key))).toBe(false);
  const p = view.proof(key);
  const n = nonexistProof(p);
  expect(toHex(n.key!)).toBe(toHex(key));
  expect(verifyNonMembership(p, iavlSpec, m.hash, key)).toBe(true);
  checkProof(p);
  const i = lowerBound(m.entries, key);
  const left = i > 0 ? m.entries[i - 1] : undefined;
  const right = m.entries[i];
  if (left === undefined) expect(n.left ?? undefined).toBeUndefined();
  else {
    expect(toHex(n.left!.key!)).toBe(toHex(left[0]));
    expect(toHex(n.left!.value!)).toBe(toHex(left[1]));
  }
  if (right === undefined) expect(n.right ?? undefined).toBeUndefined();
  else {
    expect(toHex(n.right!.key!)).toBe(toHex(right[0]));
    expect(toHex(n.right!.value!)).toBe(toHex(right[1]));
  }
}

describe.each(backends)("ICS23 proofs of the TestTreeHash tree ($name)", ({ make }) => {
  let tree: Tree;
  const models: VersionModel[] = [];

  beforeAll(() => {
    tree = make();
    const state = new Map<string, [Uint8Array, Uint8Array]>();
    for (const v of treehashOps()) {
      for (const op of v.ops) {
        if (op[0] === "s") state.set(toHex(op[1]), [op[1], op[2]]);
        else state.delete(toHex(op[1]));
      }
      for (const op of v.ops) {
        if (op[0] === "s") tree.set(op[1], op[2]);
        else tree.remove(op[1]);
      }
      const c = tree.commit();
      expect(c.version).toBe(v.version);
      expect(toHex(c.hash)).toBe(v.expectHash);
      const entries = [...state.values()].sort((x, y) => compareBytes(x[0], y[0]));
      models.push({
        version: c.version,
        hash: c.hash,
        entries,
        byHex: new Map(entries.map(([k, val]) => [toHex(k), val])),
      });
    }
  });

  afterAll(() => {
    tree.close();
  });

  it("proves every key of the last version, and each proof passes Go's IAVL rules", () => {
    const last = models[models.length - 1]!;
    expect(last.entries.length).toBe(tree.size);
    expect(toHex(tree.hash)).toBe(toHex(last.hash));
    let maxDepth = 0;
    for (const [k, v] of last.entries) {
      const p = tree.proof(k);
      const e = existProof(p);
      expect(toHex(e.key!)).toBe(toHex(k));
      expect(toHex(e.value!)).toBe(toHex(v));
      expect(verifyMembership(p, iavlSpec, last.hash, k, v)).toBe(true);
      checkIavlOps(e);
      checkProof(p);
      maxDepth = Math.max(maxDepth, e.path!.length);
    }
    // An AVL tree of 4665 leaves is between 13 and ~18 levels deep.
    expect(maxDepth).toBeGreaterThanOrEqual(13);
    expect(maxDepth).toBeLessThanOrEqual(18);
  });

  it("tree.proof(k) equals tree.at(latest).proof(k)", () => {
    const last = models[models.length - 1]!;
    const view = tree.at(last.version);
    for (const [k] of last.entries.slice(0, 200)) {
      const a = ics23.CommitmentProof.encode(tree.proof(k)).finish();
      const c = ics23.CommitmentProof.encode(view.proof(k)).finish();
      expect(toHex(a)).toBe(toHex(c));
    }
  });

  it("proves absence below the smallest key, above the largest, and between neighbours", () => {
    const last = models[models.length - 1]!;
    const view = tree.at(last.version);
    const min = last.entries[0]![0];
    const max = last.entries[last.entries.length - 1]![0];
    expect(min.length).toBeGreaterThan(1);

    // Below the smallest key: a proper prefix of it sorts before it. No left neighbour.
    const below = min.slice(0, min.length - 1);
    checkAbsent(view, last, below);
    expect(view.proof(below).nonexist!.left ?? undefined).toBeUndefined();
    if (min[0]! > 0) checkAbsent(view, last, new Uint8Array([0]));

    // Above the largest key: no right neighbour.
    const above = concatBytes(max, new Uint8Array([0]));
    checkAbsent(view, last, above);
    expect(view.proof(above).nonexist!.right ?? undefined).toBeUndefined();
    if (max[0]! < 0xff) checkAbsent(view, last, new Uint8Array([0xff, 0xff]));

    // Between neighbours: a key with 0x00 appended sorts just after it. Every other gap (the cost is the JS verifier's).
    for (let i = 0; i < last.entries.length - 1; i += 2) {
      const between = concatBytes(last.entries[i]![0], new Uint8Array([0]));
      checkAbsent(view, last, between);
    }
  });

  it("proves absence of a few hundred random keys", () => {
    const next = rng(42);
    const last = models[models.length - 1]!;
    const view = tree.at(last.version);
    let checked = 0;
    while (checked < 400) {
      const len = checked % 4 === 0 ? 1 + Math.floor(next() * 40) : 16;
      const key = randomBytes(next, len);
      if (last.byHex.has(toHex(key))) continue;
      checkAbsent(view, last, key);
      // An absence proof never proves membership of the key.
      expect(verifyMembership(view.proof(key), iavlSpec, last.hash, key, b("x"))).toBe(false);
      checked++;
    }
    expect(checked).toBe(400);
  });

  it("proves every version's keys against that version's root, and deleted keys as absent", () => {
    for (let i = 0; i < models.length; i++) {
      const m = models[i]!;
      const view = tree.at(m.version);
      expect(view.version).toBe(m.version);
      expect(toHex(view.hash)).toBe(toHex(m.hash));
      expect(view.size).toBe(m.entries.length);
      // Every 7th key (the last version is covered in full above).
      for (let j = 0; j < m.entries.length; j += 7) {
        const [k, v] = m.entries[j]!;
        const p = view.proof(k);
        expect(verifyMembership(p, iavlSpec, m.hash, k, v)).toBe(true);
        checkProof(p);
      }
      // Keys present in the previous version but removed in this one.
      if (i > 0) {
        const prev = models[i - 1]!;
        let gone = 0;
        for (const [k] of prev.entries) {
          if (m.byHex.has(toHex(k))) continue;
          checkAbsent(view, m, k);
          gone++;
        }
        expect(gone).toBeGreaterThan(0);
      }
    }
  });

  it("a membership proof does not verify a wrong value, a wrong key, or another version's root", () => {
    const roots = models.map((m) => m.hash);
    for (let r = 0; r < roots.length; r++) {
      for (let s = r + 1; s < roots.length; s++) expect(toHex(roots[r]!)).not.toBe(toHex(roots[s]!));
    }
    const next = rng(7);
    for (const m of models) {
      const view = tree.at(m.version);
      for (let t = 0; t < 40; t++) {
        const [k, v] = m.entries[Math.floor(next() * m.entries.length)]!;
        const p = view.proof(k);
        expect(verifyMembership(p, iavlSpec, m.hash, k, v)).toBe(true);
        const flipped = Uint8Array.from(v);
        flipped[0] = flipped[0]! ^ 1;
        expect(verifyMembership(p, iavlSpec, m.hash, k, flipped)).toBe(false);
        expect(verifyMembership(p, iavlSpec, m.hash, k, concatBytes(v, new Uint8Array([0])))).toBe(false);
        expect(verifyMembership(p, iavlSpec, m.hash, k, v.slice(0, v.length - 1))).toBe(false);
        expect(verifyMembership(p, iavlSpec, m.hash, k, new Uint8Array(0))).toBe(false);
        const otherKey = concatBytes(k, new Uint8Array([0]));
        expect(verifyMembership(p, iavlSpec, m.hash, otherKey, v)).toBe(false);
        // An existence proof is not a non-existence proof.
        expect(verifyNonMembership(p, iavlSpec, m.hash, k)).toBe(false);
        for (const other of models) {
          if (other.version === m.version) continue;
          expect(verifyMembership(p, iavlSpec, other.hash, k, v)).toBe(false);
        }
        // A copy: the tree may hand out its own hash buffer.
        const badRoot = Uint8Array.from(m.hash);
        badRoot[31] = badRoot[31]! ^ 0x80;
        expect(verifyMembership(p, iavlSpec, badRoot, k, v)).toBe(false);
      }
    }
  });

  it("a non-membership proof does not verify another key, nor against another version's root", () => {
    const last = models[models.length - 1]!;
    const view = tree.at(last.version);
    const next = rng(99);
    for (let t = 0; t < 60; t++) {
      const i = 1 + Math.floor(next() * (last.entries.length - 2));
      const [k] = last.entries[i]!;
      const absent = concatBytes(k, new Uint8Array([0]));
      const p = view.proof(absent);
      expect(verifyNonMembership(p, iavlSpec, last.hash, absent)).toBe(true);
      // The present neighbours are not proven absent by it, nor is a key further away.
      expect(verifyNonMembership(p, iavlSpec, last.hash, k)).toBe(false);
      expect(verifyNonMembership(p, iavlSpec, last.hash, last.entries[i + 1]![0])).toBe(false);
      expect(verifyNonMembership(p, iavlSpec, last.hash, concatBytes(last.entries[i + 1]![0], new Uint8Array([0])))).toBe(false);
      for (const other of models.slice(0, -1)) expect(verifyNonMembership(p, iavlSpec, other.hash, absent)).toBe(false);
    }
  });

  it("round-trips through CommitmentProof.encode / decode", () => {
    const next = rng(3);
    for (const m of models) {
      const view = tree.at(m.version);
      for (let t = 0; t < 30; t++) {
        const [k, v] = m.entries[Math.floor(next() * m.entries.length)]!;
        const absent = concatBytes(k, new Uint8Array([0]));
        for (const [key, p] of [[k, view.proof(k)], [absent, view.proof(absent)]] as const) {
          const wire = ics23.CommitmentProof.encode(p).finish();
          expect(wire.length).toBeGreaterThan(0);
          const back = ics23.CommitmentProof.decode(wire);
          expect(toHex(ics23.CommitmentProof.encode(back).finish())).toBe(toHex(wire));
          checkProof(back);
          if (key === k) expect(verifyMembership(back, iavlSpec, m.hash, k, v)).toBe(true);
          else expect(verifyNonMembership(back, iavlSpec, m.hash, key)).toBe(true);
        }
      }
    }
  });
});

describe.each(backends)("ICS23 proofs of small trees ($name)", ({ make }) => {
  it("a single-key tree: existence with an empty path, absence on both sides", () => {
    const tree = make();
    tree.set(b("m"), b("v"));
    const { hash } = tree.commit();
    const p = tree.proof(b("m"));
    expect(existProof(p).path ?? []).toHaveLength(0);
    expect(verifyMembership(p, iavlSpec, hash, b("m"), b("v"))).toBe(true);
    checkProof(p);
    for (const k of [b("a"), b("z"), b("m\u0000")]) {
      const q = tree.proof(k);
      expect(verifyNonMembership(q, iavlSpec, hash, k)).toBe(true);
      checkProof(q);
    }
    tree.close();
  });

  it("the leaf prefix carries the version the leaf was written at; inner headers carry height, size, version", () => {
    const tree = make();
    tree.set(b("a"), b("1"));
    tree.commit();
    tree.set(b("b"), b("2"));
    const { hash } = tree.commit();
    const pa = existProof(tree.proof(b("a")));
    const pb = existProof(tree.proof(b("b")));
    // varint(0) ‖ varint(1) ‖ varint(version): zig-zag doubles, so version 1 → 0x02, version 2 → 0x04.
    expect(toHex(pa.leaf!.prefix!)).toBe("000202");
    expect(toHex(pb.leaf!.prefix!)).toBe("000204");
    // The root: height 1, size 2, version 2, and a is its left child, b its right.
    expect(pa.path).toHaveLength(1);
    expect(toHex(pa.path![0]!.prefix!)).toBe("02040420");
    expect(pa.path![0]!.suffix!.length).toBe(33);
    expect(toHex(pb.path![0]!.prefix!).slice(0, 8)).toBe("02040420");
    expect(pb.path![0]!.prefix!.length).toBe(4 + 33);
    expect(pb.path![0]!.suffix?.length ?? 0).toBe(0);
    expect(verifyMembership(tree.proof(b("a")), iavlSpec, hash, b("a"), b("1"))).toBe(true);
    expect(verifyMembership(tree.proof(b("b")), iavlSpec, hash, b("b"), b("2"))).toBe(true);
    tree.close();
  });

  it("asking to prove a key whose value is empty throws EMPTY_VALUE_PROOF", () => {
    const tree = make();
    tree.set(b("a"), b("1"));
    tree.set(b("e"), new Uint8Array(0));
    tree.set(b("z"), b("26"));
    tree.commit();
    expectIavlError(() => tree.proof(b("e")), "EMPTY_VALUE_PROOF");
    expectIavlError(() => tree.at(1).proof(b("e")), "EMPTY_VALUE_PROOF");
    expect(errorOf(() => tree.proof(b("e"))).message).toBe(`ICS23 cannot prove key ${toHex(b("e"))}: its value is empty`);
    // A neighbour with an empty value cannot be proven either: the message names the absent key asked for first.
    for (const absent of ["d", "f"]) {
      expectIavlError(() => tree.proof(b(absent)), "EMPTY_VALUE_PROOF");
      expect(errorOf(() => tree.proof(b(absent))).message).toMatch(
        new RegExp(`^ICS23 cannot prove that key ${toHex(b(absent))} is absent: .*its neighbour ${toHex(b("e"))} has an empty value`),
      );
    }
    // Keys whose proofs do not touch the empty value still work.
    const pa = tree.proof(b("a"));
    expect(verifyMembership(pa, iavlSpec, tree.hash, b("a"), b("1"))).toBe(true);
    const p0 = tree.proof(b("0"));
    expect(verifyNonMembership(p0, iavlSpec, tree.hash, b("0"))).toBe(true);
    // Once the value is non-empty again, it is provable.
    tree.set(b("e"), b("5"));
    tree.commit();
    expect(verifyMembership(tree.proof(b("e")), iavlSpec, tree.hash, b("e"), b("5"))).toBe(true);
    expectIavlError(() => tree.at(1).proof(b("e")), "EMPTY_VALUE_PROOF");
    tree.close();
  });

  it("a proof against an empty committed version throws EMPTY_TREE", () => {
    const tree = make();
    tree.commit();
    expectIavlError(() => tree.proof(b("a")), "EMPTY_TREE");
    tree.set(b("a"), b("1"));
    tree.commit();
    expectIavlError(() => tree.at(1).proof(b("a")), "EMPTY_TREE");
    expect(verifyMembership(tree.proof(b("a")), iavlSpec, tree.hash, b("a"), b("1"))).toBe(true);
    tree.close();
  });
});

interface SingleFixture {
  key: string;
  value: string;
  root: string;
  proof: string;
}

interface BatchFixture {
  root: string;
  proof: string;
  items: Array<{ key: string; value: string }>;
}

describe("cosmos/ics23 testdata/iavl fixtures", () => {
  for (const name of ["exist_left", "exist_middle", "exist_right"]) {
    it(`${name}: verifies as membership and passes Go's IAVL rules`, () => {
      const f = readVector<SingleFixture>(`ics23-iavl/${name}.json`);
      const p = ics23.CommitmentProof.decode(hex(f.proof));
      const key = hex(f.key);
      const value = hex(f.value);
      const root = hex(f.root);
      expect(verifyMembership(p, iavlSpec, root, key, value)).toBe(true);
      checkIavlOps(p.exist!);
      checkProof(p);
      expect(verifyMembership(p, iavlSpec, root, key, concatBytes(value, new Uint8Array([1])))).toBe(false);
      expect(verifyNonMembership(p, iavlSpec, root, key)).toBe(false);
    });
  }

  for (const name of ["nonexist_left", "nonexist_middle", "nonexist_right"]) {
    it(`${name}: verifies as non-membership and passes Go's IAVL rules`, () => {
      const f = readVector<SingleFixture>(`ics23-iavl/${name}.json`);
      expect(f.value).toBe("");
      const p = ics23.CommitmentProof.decode(hex(f.proof));
      const key = hex(f.key);
      const root = hex(f.root);
      expect(verifyNonMembership(p, iavlSpec, root, key)).toBe(true);
      checkProof(p);
      const badRoot = Uint8Array.from(root);
      badRoot[0] = badRoot[0]! ^ 1;
      expect(verifyNonMembership(p, iavlSpec, badRoot, key)).toBe(false);
    });
  }

  it("batch_exist: every item verifies, and every entry passes Go's IAVL rules", () => {
    const f = readVector<BatchFixture>("ics23-iavl/batch_exist.json");
    const p = ics23.CommitmentProof.decode(hex(f.proof));
    const root = hex(f.root);
    expect(f.items.length).toBeGreaterThan(0);
    const items = new Map(f.items.map((i) => [hex(i.key), hex(i.value)] as const));
    expect(batchVerifyMembership(p, iavlSpec, root, items)).toBe(true);
    for (const [k, v] of items) expect(verifyMembership(p, iavlSpec, root, k, v)).toBe(true);
    checkProof(p);
    const [k0, v0] = [...items][0]!;
    expect(batchVerifyMembership(p, iavlSpec, root, new Map([[k0, concatBytes(v0, new Uint8Array([1]))]]))).toBe(false);
  });

  it("batch_nonexist: every item verifies, and every entry passes Go's IAVL rules", () => {
    const f = readVector<BatchFixture>("ics23-iavl/batch_nonexist.json");
    const p = ics23.CommitmentProof.decode(hex(f.proof));
    const root = hex(f.root);
    expect(f.items.length).toBeGreaterThan(0);
    const keys = f.items.map((i) => hex(i.key));
    expect(batchVerifyNonMembership(p, iavlSpec, root, keys)).toBe(true);
    for (const k of keys) expect(verifyNonMembership(p, iavlSpec, root, k)).toBe(true);
    checkProof(p);
    const badRoot = Uint8Array.from(root);
    badRoot[5] = badRoot[5]! ^ 1;
    expect(batchVerifyNonMembership(p, iavlSpec, badRoot, keys)).toBe(false);
  });
});

describe("checkIavlOps rejects what Go's validateIavlOps rejects", () => {
  /** A real proof of depth ≥ 2 to mutate. */
  function sample(): ics23.IExistenceProof {
    const f = readVector<SingleFixture>("ics23-iavl/exist_middle.json");
    const p = ics23.CommitmentProof.decode(hex(f.proof));
    const e = p.exist!;
    expect(e.path!.length).toBeGreaterThanOrEqual(2);
    return ics23.ExistenceProof.decode(ics23.ExistenceProof.encode(e).finish());
  }

  function withLeafPrefix(prefix: number[]): ics23.IExistenceProof {
    const e = sample();
    e.leaf = { ...e.leaf!, prefix: new Uint8Array(prefix) };
    return e;
  }

  function withInner(i: number, change: (op: ics23.IInnerOp) => ics23.IInnerOp): ics23.IExistenceProof {
    const e = sample();
    e.path = e.path!.map((op, j) => (j === i ? change({ ...op }) : op));
    return e;
  }

  /** Replaces the three header varints of inner op `i` with `header`, keeping what follows them. */
  function withInnerHeader(i: number, header: number[]): ics23.IExistenceProof {
    return withInner(i, (op) => {
      const old = op.prefix!;
      // The fixture's headers are three single-byte varints.
      const rest = old.slice(3);
      return { ...op, prefix: concatBytes(new Uint8Array(header), rest) };
    });
  }

  it("accepts the unmodified fixture", () => {
    expect(() => checkIavlOps(sample())).not.toThrow();
  });

  it("rejects a bad leaf prefix", () => {
    expect(() => checkIavlOps(withLeafPrefix([0, 2, 2, 0]))).toThrow(/leaf/); // a byte after the three varints
    expect(() => checkIavlOps(withLeafPrefix([0, 2]))).toThrow(/leaf/); // only two varints
    expect(() => checkIavlOps(withLeafPrefix([]))).toThrow(/leaf/);
    expect(() => checkIavlOps(withLeafPrefix([0, 4, 2]))).toThrow(/size must be 1/); // size 2
    expect(() => checkIavlOps(withLeafPrefix([0, 0, 2]))).toThrow(/size must be 1/); // size 0
    expect(() => checkIavlOps(withLeafPrefix([2, 2, 2]))).toThrow(/height must be 0/); // height 1
    expect(() => checkIavlOps(withLeafPrefix([0, 2, 1]))).toThrow(/version/); // version -1
    expect(() => checkIavlOps(withLeafPrefix([0, 2, 0x80]))).toThrow(/leaf version/); // cut-short varint
    expect(() => checkIavlOps(withLeafPrefix([0, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]))).toThrow(/overflow/);
    expect(() => checkIavlOps(withLeafPrefix([0, 2, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]))).not.toThrow(); // max int64
  });

  it("rejects other leaf ops than IavlSpec's, and an empty key or value", () => {
    const e1 = sample();
    e1.leaf = { ...e1.leaf!, hash: ics23.HashOp.SHA512 };
    expect(() => checkIavlOps(e1)).toThrow(/hash/);
    const e2 = sample();
    e2.leaf = { ...e2.leaf!, prehashKey: ics23.HashOp.SHA256 };
    expect(() => checkIavlOps(e2)).toThrow(/prehash_key/);
    const e3 = sample();
    e3.leaf = { ...e3.leaf!, length: ics23.LengthOp.NO_PREFIX };
    expect(() => checkIavlOps(e3)).toThrow(/length/);
    const e4 = sample();
    e4.value = new Uint8Array(0);
    expect(() => checkIavlOps(e4)).toThrow(/value/);
    const e5 = sample();
    e5.leaf = null;
    expect(() => checkIavlOps(e5)).toThrow(/leaf op/);
  });

  it("rejects an inner height below its layer and negative size or version", () => {
    // Layer 2 (index 1) with height 1 (zig-zag 0x02).
    expect(() => checkIavlOps(withInnerHeader(1, [0x02, 0x04, 0x02]))).toThrow(/height 1 .* layer number 2/);
    // Height equal to the layer is fine.
    expect(() => checkIavlOps(withInnerHeader(1, [0x04, 0x04, 0x02]))).not.toThrow();
    expect(() => checkIavlOps(withInnerHeader(0, [0x02, 0x03, 0x02]))).toThrow(/size -2/);
    expect(() => checkIavlOps(withInnerHeader(0, [0x02, 0x04, 0x01]))).toThrow(/version -1/);
  });

  it("rejects an inner prefix whose remainder is neither 1 nor 34 bytes, or a malformed suffix", () => {
    expect(() => checkIavlOps(withInner(0, (op) => ({ ...op, prefix: concatBytes(op.prefix!, new Uint8Array([0])) })))).toThrow(
      /expected 1 or 34/,
    );
    expect(() => checkIavlOps(withInner(0, (op) => ({ ...op, prefix: op.prefix!.slice(0, 3) })))).toThrow(/inner op 1/);
    expect(() => checkIavlOps(withInner(0, (op) => ({ ...op, suffix: new Uint8Array(32) })))).toThrow(/suffix/);
    expect(() => checkIavlOps(withInner(0, (op) => ({ ...op, hash: ics23.HashOp.SHA512 })))).toThrow(/hash op/);
    // A 34-byte remainder is accepted (a right child: length byte, left hash, length byte).
    expect(() =>
      checkIavlOps(withInner(0, (op) => ({ ...op, prefix: concatBytes(op.prefix!.slice(0, 3), new Uint8Array(34)), suffix: new Uint8Array(0) }))),
    ).not.toThrow();
  });

  it(`rejects a path longer than ${GO_DEFAULT_MAX_DEPTH} steps`, () => {
    const e = sample();
    const top = e.path![e.path!.length - 1]!;
    const ops: ics23.IInnerOp[] = [];
    for (let i = 1; i <= GO_DEFAULT_MAX_DEPTH + 1; i++) {
      // Height i (zig-zag 2i as a varint) keeps each layer's height rule satisfied.
      ops.push({ ...top, prefix: concatBytes(new Uint8Array(i * 2 < 0x80 ? [i * 2] : [(i * 2) | 0x80, (i * 2) >> 7]), top.prefix!.slice(1)) });
    }
    e.path = ops.slice(0, GO_DEFAULT_MAX_DEPTH);
    expect(() => checkIavlOps(e)).not.toThrow();
    e.path = ops;
    expect(() => checkIavlOps(e)).toThrow(/exceeds/);
  });

  it("checkProof rejects a non-existence proof with neither neighbour and checks both neighbours", () => {
    expect(() => checkProof({ nonexist: { key: b("k") } })).toThrow(/neither/);
    expect(() => checkProof({})).toThrow(/no proof/);
    const bad = withLeafPrefix([0, 4, 2]);
    expect(() => checkProof({ nonexist: { key: b("k"), right: sample(), left: bad } })).toThrow(/size must be 1/);
    expect(() => checkProof({ nonexist: { key: b("k"), left: sample() } })).not.toThrow();
  });
});
