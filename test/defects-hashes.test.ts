/**
 * Hashes handed to callers are the caller's own: changing them changes nothing in the tree, the store or a
 * read-only handle. Stores are reopened first, because then the hashes come from SQLite rows (Buffers) instead of
 * being computed fresh.
 */
import { iavlSpec, verifyMembership } from "@confio/ics23";
import { describe, expect, it } from "vitest";
import { EMPTY_HASH, toHex, Tree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { b } from "./helpers.js";

const VERSIONS = 3;
const KEYS = 60;

/** The operations of version `v` (the same for the store and the model). */
function applyOps(t: Tree, v: number): void {
  for (let i = 0; i < KEYS; i++) if ((i + v) % 3 !== 0) t.set(b(`key-${i}`), b(`value-${v}-${i}`));
  if (v > 1) t.remove(b(`key-${v}`));
}

/** A store of VERSIONS committed versions (every one a checkpoint, so the reopened root comes from a stored row). */
function makeStore(): { dir: string; model: Tree; hashes: string[] } {
  const dir = tempDir();
  const t = Tree.open(dir, { checkpointInterval: 1 });
  const model = Tree.memory();
  const hashes = [toHex(EMPTY_HASH)];
  for (let v = 1; v <= VERSIONS; v++) {
    applyOps(t, v);
    applyOps(model, v);
    const got = toHex(t.commit().hash);
    expect(got).toBe(toHex(model.commit().hash));
    hashes.push(got);
  }
  t.close();
  return { dir, model, hashes };
}

/** Checks `view` still answers with version `v`'s hash and proofs that verify against it. */
function expectIntact(view: { hash: Uint8Array; get(k: Uint8Array): Uint8Array | undefined; proof(k: Uint8Array): ReturnType<Tree["proof"]> }, want: string): void {
  expect(toHex(view.hash)).toBe(want);
  for (const i of [1, 2, 10, 31, 59]) {
    const key = b(`key-${i}`);
    const value = view.get(key);
    if (value === undefined) continue;
    expect(verifyMembership(view.proof(key), iavlSpec, view.hash, key, value)).toBe(true);
  }
}

/** Commits two more versions on `t` and on `model` and expects equal hashes. */
function expectSameFuture(t: Tree, model: Tree): void {
  const from = model.version + 1;
  for (let v = from; v <= from + 1; v++) {
    applyOps(t, v);
    applyOps(model, v);
    expect(toHex(t.commit().hash)).toBe(toHex(model.commit().hash));
  }
}

describe("returned hashes are fresh copies (after reopening a store)", () => {
  it("tree.hash: zeroing the returned array changes neither later reads, proofs nor later commits", () => {
    const { dir, model, hashes } = makeStore();
    const t = Tree.open(dir);
    t.hash.fill(0);
    expect(toHex(t.hash)).toBe(hashes[VERSIONS]);
    expectIntact(t.at(VERSIONS), hashes[VERSIONS]!);
    expectSameFuture(t, model);
    t.close();
  });

  it("tree.workingHash(): zeroing the returned array changes nothing", () => {
    const { dir, model, hashes } = makeStore();
    const t = Tree.open(dir);
    t.workingHash().fill(0);
    expect(toHex(t.workingHash())).toBe(hashes[VERSIONS]);
    expect(toHex(t.hash)).toBe(hashes[VERSIONS]);
    expectIntact(t.at(VERSIONS), hashes[VERSIONS]!);
    expectSameFuture(t, model);
    t.close();
  });

  it("tree.at(v).hash: zeroing the returned array changes neither that view nor later proofs", () => {
    const { dir, model, hashes } = makeStore();
    const t = Tree.open(dir);
    for (let v = 1; v <= VERSIONS; v++) {
      const view = t.at(v);
      view.hash.fill(0);
      expectIntact(view, hashes[v]!);
      expectIntact(t.at(v), hashes[v]!);
    }
    expectSameFuture(t, model);
    t.close();
  });

  it("the hash of commit()'s result (an empty commit right after reopening): zeroing it changes nothing", () => {
    const { dir, model, hashes } = makeStore();
    const t = Tree.open(dir);
    // Nothing changed: the new version's root is the reopened one, whose hash came from its stored row.
    const c = t.commit();
    model.commit();
    expect(toHex(c.hash)).toBe(hashes[VERSIONS]);
    c.hash.fill(0);
    expect(toHex(t.hash)).toBe(hashes[VERSIONS]);
    expectIntact(t.at(c.version), hashes[VERSIONS]!);
    expectSameFuture(t, model);
    t.close();
  });

  it("a read-only handle's hash and at(v).hash: zeroing them changes nothing", () => {
    const { dir, hashes } = makeStore();
    const r = Tree.openReadOnly(dir);
    r.hash.fill(0);
    expect(toHex(r.hash)).toBe(hashes[VERSIONS]);
    expectIntact(r, hashes[VERSIONS]!);
    for (let v = 1; v <= VERSIONS; v++) {
      const view = r.at(v);
      view.hash.fill(0);
      expectIntact(view, hashes[v]!);
    }
    r.close();
  });

  it("a read-only handle on a store with no version yet: zeroing its (empty) hash changes no other tree's hash", () => {
    const dir = tempDir();
    Tree.open(dir).close();
    const r = Tree.openReadOnly(dir);
    const want = toHex(Tree.memory().hash);
    const saved = EMPTY_HASH.slice();
    try {
      r.hash.fill(0);
      expect(toHex(r.hash)).toBe(want);
      expect(toHex(EMPTY_HASH)).toBe(want);
      expect(toHex(Tree.memory().hash)).toBe(want);
    } finally {
      // The library's own constant may have been zeroed through the handle: restore it for the other tests here.
      EMPTY_HASH.set(saved);
      r.close();
    }
  });

  it("every returned hash, key and value is a plain Uint8Array, not a Buffer", () => {
    const { dir } = makeStore();
    // Every offender is listed, not only the first.
    const notPlain: string[] = [];
    const plain = (what: string, x: Uint8Array | undefined): void => {
      expect(x, what).toBeDefined();
      if (Object.getPrototypeOf(x) !== Uint8Array.prototype) notPlain.push(`${what}: ${(Object.getPrototypeOf(x) as object).constructor.name}`);
    };
    const t = Tree.open(dir);
    plain("tree.hash", t.hash);
    plain("tree.workingHash()", t.workingHash());
    plain("tree.at(v).hash", t.at(2).hash);
    plain("tree.get(k)", t.get(b("key-1")));
    plain("tree.at(v).get(k)", t.at(2).get(b("key-1")));
    const [k, v] = t.iterate().next().value!;
    plain("tree.iterate() key", k);
    plain("tree.iterate() value", v);
    const [vk, vv] = t.at(2).iterate().next().value!;
    plain("tree.at(v).iterate() key", vk);
    plain("tree.at(v).iterate() value", vv);
    for (const n of t.at(2).export()) {
      plain(`export key (height ${n.height})`, n.key);
      if (n.value !== undefined) plain("export value", n.value);
    }
    plain("commit().hash (nothing changed)", t.commit().hash);
    t.close();
    const r = Tree.openReadOnly(dir);
    plain("readOnly.hash", r.hash);
    plain("readOnly.at(v).hash", r.at(1).hash);
    plain("readOnly.get(k)", r.get(b("key-1")));
    const [rk, rv] = r.iterate().next().value!;
    plain("readOnly.iterate() key", rk);
    plain("readOnly.iterate() value", rv);
    r.close();
    expect(notPlain).toEqual([]);
  });
});
