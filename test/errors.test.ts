import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { decodeItems, encodeItems, IavlError, isIavlError, MAX_KEY_BYTES, MAX_VALUE_BYTES, MultiTree, toHex, Tree, type ErrorCode } from "../src/index.js";
import { backends, tempDir } from "./backends.js";
import { b } from "./helpers.js";
import { CommitMarker } from "../src/sqlite/commit-marker.js";
import { openReader } from "../src/sqlite/connection.js";

/** Runs `f`, which must throw an IavlError with `code`; returns the error for further checks. */
function expectCode(f: () => unknown, code: ErrorCode): IavlError {
  let caught: unknown;
  try {
    f();
  } catch (e) {
    caught = e;
  }
  expect(caught, `expected IavlError ${code}`).toBeInstanceOf(IavlError);
  const err = caught as IavlError;
  expect(err.code).toBe(code);
  expect(err.name).toBe("IavlError");
  expect(isIavlError(err, code)).toBe(true);
  expect(err.message.length).toBeGreaterThan(0);
  return err;
}

/** Everything a caller can observe of a tree, to show a failed call changed nothing. */
function observe(tree: Tree): string {
  return JSON.stringify({
    version: tree.version,
    hash: toHex(tree.hash),
    size: tree.size,
    working: toHex(tree.workingHash()),
    entries: [...tree.iterate()].map(([k, v]) => `${toHex(k)}=${toHex(v)}`),
    versions: tree.versions(),
    a: tree.get(b("a")) === undefined ? null : toHex(tree.get(b("a"))!),
  });
}

/** Values that are not Uint8Array, cast to pass the type checker as a JS caller would. */
const NOT_BYTES: Array<[string, Uint8Array]> = [
  ["a string", "abc" as unknown as Uint8Array],
  ["a number", 42 as unknown as Uint8Array],
  ["null", null as unknown as Uint8Array],
  ["undefined", undefined as unknown as Uint8Array],
  ["an array", [1, 2, 3] as unknown as Uint8Array],
  ["an ArrayBuffer", new ArrayBuffer(2) as unknown as Uint8Array],
  ["a plain object", { length: 1, 0: 1 } as unknown as Uint8Array],
];

const EMPTY = new Uint8Array(0);

/** A tree with one committed version and uncommitted changes on top. */
function seeded(make: () => Tree): Tree {
  const tree = make();
  tree.set(b("a"), b("1"));
  tree.set(b("b"), b("2"));
  tree.set(b("c"), b("3"));
  tree.commit();
  tree.set(b("a"), b("10"));
  tree.remove(b("c"));
  return tree;
}

describe.each(backends)("bad input throws IavlError and changes nothing ($name)", ({ make }) => {
  it.each(NOT_BYTES)("a key that is %s: INVALID_ARGUMENT from set/get/has/remove/proof", (_name, bad) => {
    const tree = seeded(make);
    const before = observe(tree);
    expectCode(() => tree.set(bad, b("x")), "INVALID_ARGUMENT");
    expectCode(() => tree.get(bad), "INVALID_ARGUMENT");
    expectCode(() => tree.has(bad), "INVALID_ARGUMENT");
    expectCode(() => tree.remove(bad), "INVALID_ARGUMENT");
    expectCode(() => tree.proof(bad), "INVALID_ARGUMENT");
    const view = tree.at(1);
    expectCode(() => view.get(bad), "INVALID_ARGUMENT");
    expectCode(() => view.has(bad), "INVALID_ARGUMENT");
    expectCode(() => view.proof(bad), "INVALID_ARGUMENT");
    expect(observe(tree)).toBe(before);
    tree.close();
  });

  it("an empty key: EMPTY_KEY from set/get/has/remove/proof", () => {
    const tree = seeded(make);
    const before = observe(tree);
    expectCode(() => tree.set(EMPTY, b("x")), "EMPTY_KEY");
    expectCode(() => tree.set(EMPTY, EMPTY), "EMPTY_KEY");
    expectCode(() => tree.get(EMPTY), "EMPTY_KEY");
    expectCode(() => tree.has(EMPTY), "EMPTY_KEY");
    expectCode(() => tree.remove(EMPTY), "EMPTY_KEY");
    expectCode(() => tree.proof(EMPTY), "EMPTY_KEY");
    const view = tree.at(1);
    expectCode(() => view.get(EMPTY), "EMPTY_KEY");
    expectCode(() => view.has(EMPTY), "EMPTY_KEY");
    expectCode(() => view.proof(EMPTY), "EMPTY_KEY");
    expect(observe(tree)).toBe(before);
    tree.close();
  });

  it.each(NOT_BYTES)("a value that is %s: INVALID_ARGUMENT, for a new and for an existing key", (_name, bad) => {
    const tree = seeded(make);
    const before = observe(tree);
    expectCode(() => tree.set(b("new"), bad), "INVALID_ARGUMENT");
    expectCode(() => tree.set(b("a"), bad), "INVALID_ARGUMENT");
    expect(observe(tree)).toBe(before);
    expect(tree.has(b("new"))).toBe(false);
    tree.close();
  });

  it("a key over MAX_KEY_BYTES or a value over MAX_VALUE_BYTES: INVALID_ARGUMENT from set, naming the limit", () => {
    const tree = seeded(make);
    const before = observe(tree);
    const long = new Uint8Array(MAX_KEY_BYTES + 1).fill(0x6b);
    expect(expectCode(() => tree.set(long, b("x")), "INVALID_ARGUMENT").message).toContain(`${MAX_KEY_BYTES}`);
    expect(expectCode(() => tree.set(b("a"), new Uint8Array(MAX_VALUE_BYTES + 1)), "INVALID_ARGUMENT").message).toContain(`${MAX_VALUE_BYTES}`);
    expect(observe(tree)).toBe(before);
    // Nothing of the refused sets reaches the next version either.
    const c = tree.commit();
    expect(tree.at(c.version).has(long)).toBe(false);
    expect(toHex(tree.at(c.version).get(b("a"))!)).toBe(toHex(b("10")));
    tree.close();
  });

  it("an empty value is allowed, and differs from absence", () => {
    const tree = seeded(make);
    const working = toHex(tree.workingHash());
    tree.set(b("e"), EMPTY);
    expect(tree.has(b("e"))).toBe(true);
    expect(tree.get(b("e"))).toBeInstanceOf(Uint8Array);
    expect(tree.get(b("e"))!.length).toBe(0);
    expect(toHex(tree.workingHash())).not.toBe(working);
    const c = tree.commit();
    expect(tree.at(c.version).has(b("e"))).toBe(true);
    expect(tree.at(c.version).get(b("e"))!.length).toBe(0);
    expect([...tree.at(c.version).iterate()].map(([k]) => toHex(k))).toContain(toHex(b("e")));
    tree.close();
  });

  it.each(NOT_BYTES.filter(([name]) => name !== "undefined"))("an iteration bound that is %s: INVALID_ARGUMENT", (_name, bad) => {
    const tree = seeded(make);
    const before = observe(tree);
    expectCode(() => [...tree.iterate({ start: bad })], "INVALID_ARGUMENT");
    expectCode(() => [...tree.iterate({ end: bad })], "INVALID_ARGUMENT");
    expectCode(() => [...tree.iterate({ start: b("a"), end: bad, reverse: true })], "INVALID_ARGUMENT");
    const view = tree.at(1);
    expectCode(() => [...view.iterate({ start: bad })], "INVALID_ARGUMENT");
    expectCode(() => [...view.iterate({ end: bad, reverse: true })], "INVALID_ARGUMENT");
    expect(observe(tree)).toBe(before);
    tree.close();
  });

  it("undefined bounds mean unbounded", () => {
    const tree = seeded(make);
    expect([...tree.iterate({ start: undefined, end: undefined })].map(([k]) => toHex(k))).toEqual([toHex(b("a")), toHex(b("b"))]);
    tree.close();
  });

  it("at(v) of a version never committed: VERSION_NOT_FOUND; of 0, -1, 1.5, NaN, a string: INVALID_ARGUMENT", () => {
    const tree = seeded(make);
    tree.commit();
    const before = observe(tree);
    expect(tree.versions()).toEqual([1, 2]);
    expectCode(() => tree.at(3), "VERSION_NOT_FOUND");
    expectCode(() => tree.at(99), "VERSION_NOT_FOUND");
    expectCode(() => tree.at(Number.MAX_SAFE_INTEGER), "VERSION_NOT_FOUND");
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) {
      expectCode(() => tree.at(bad), "INVALID_ARGUMENT");
    }
    expectCode(() => tree.at("1" as unknown as number), "INVALID_ARGUMENT");
    expectCode(() => tree.at(null as unknown as number), "INVALID_ARGUMENT");
    expect(observe(tree)).toBe(before);
    expect(tree.at(1).version).toBe(1);
    expect(tree.at(2).version).toBe(2);
    tree.close();
  });

  it("at(v) and proof() before the first commit: VERSION_NOT_FOUND", () => {
    const tree = make();
    tree.set(b("a"), b("1"));
    const before = observe(tree);
    expectCode(() => tree.at(1), "VERSION_NOT_FOUND");
    expectCode(() => tree.proof(b("a")), "VERSION_NOT_FOUND");
    expect(observe(tree)).toBe(before);
    expect(tree.commit().version).toBe(1);
    expect(tree.proof(b("a")).exist).toBeTruthy();
    tree.close();
  });

  it("every method after close(): CLOSED; closing twice is harmless", () => {
    const tree = seeded(make);
    const view = tree.at(1);
    tree.close();
    expect(() => tree.close()).not.toThrow();
    expectCode(() => tree.version, "CLOSED");
    expectCode(() => tree.hash, "CLOSED");
    expectCode(() => tree.size, "CLOSED");
    expectCode(() => tree.set(b("a"), b("1")), "CLOSED");
    expectCode(() => tree.get(b("a")), "CLOSED");
    expectCode(() => tree.has(b("a")), "CLOSED");
    expectCode(() => tree.remove(b("a")), "CLOSED");
    expectCode(() => [...tree.iterate()], "CLOSED");
    expectCode(() => tree.workingHash(), "CLOSED");
    expectCode(() => tree.commit(), "CLOSED");
    expectCode(() => tree.at(1), "CLOSED");
    expectCode(() => tree.versions(), "CLOSED");
    expectCode(() => tree.proof(b("a")), "CLOSED");
    // A view taken before close() is closed too.
    expectCode(() => view.hash, "CLOSED");
    expectCode(() => view.size, "CLOSED");
    expectCode(() => view.get(b("a")), "CLOSED");
    expectCode(() => view.has(b("a")), "CLOSED");
    expectCode(() => [...view.iterate()], "CLOSED");
    expectCode(() => view.proof(b("a")), "CLOSED");
    // Bad arguments after close still report something stable (either code is acceptable, but it must be an IavlError).
    let caught: unknown;
    try {
      tree.set("x" as unknown as Uint8Array, b("1"));
    } catch (e) {
      caught = e;
    }
    expect(isIavlError(caught)).toBe(true);
  });

  it("an iterator left open across close() fails on its next step", () => {
    const tree = seeded(make);
    const committed = tree.at(1).iterate();
    expect(committed.next().done).toBe(false);
    const working = tree.iterate();
    expect(working.next().done).toBe(false);
    tree.close();
    expectCode(() => committed.next(), "CLOSED");
    expectCode(() => working.next(), "CLOSED");
  });

  it("changing the working tree during iterate(): CONCURRENT_MODIFICATION on the next step", () => {
    const tree = seeded(make);
    tree.set(b("d"), b("4"));
    // set
    const it1 = tree.iterate();
    expect(toHex(it1.next().value![0])).toBe(toHex(b("a")));
    tree.set(b("zz"), b("9"));
    expectCode(() => it1.next(), "CONCURRENT_MODIFICATION");
    // remove of a present key
    const it2 = tree.iterate({ reverse: true });
    expect(it2.next().done).toBe(false);
    expect(tree.remove(b("zz"))).toBe(true);
    expectCode(() => it2.next(), "CONCURRENT_MODIFICATION");
    // update of an existing key
    const it3 = tree.iterate({ start: b("a") });
    expect(it3.next().done).toBe(false);
    tree.set(b("a"), b("11"));
    expectCode(() => it3.next(), "CONCURRENT_MODIFICATION");
    // commit
    const it4 = tree.iterate();
    expect(it4.next().done).toBe(false);
    tree.commit();
    expectCode(() => it4.next(), "CONCURRENT_MODIFICATION");
    // Removing an absent key changes nothing, so the iterator goes on.
    const it5 = tree.iterate();
    expect(it5.next().done).toBe(false);
    expect(tree.remove(b("absent"))).toBe(false);
    expect([...it5].map(([k]) => toHex(k))).toEqual([b("b"), b("d")].map(toHex));
    // A failed set (bad value) changes nothing either.
    const it6 = tree.iterate();
    expect(it6.next().done).toBe(false);
    expectCode(() => tree.set(b("q"), "v" as unknown as Uint8Array), "INVALID_ARGUMENT");
    expect([...it6].length).toBe(2);
    // Iterators over committed versions are unaffected by working changes.
    const view = tree.at(tree.version);
    const it7 = view.iterate();
    expect(it7.next().done).toBe(false);
    tree.set(b("c"), b("30"));
    tree.remove(b("b"));
    expect([...it7].map(([k]) => toHex(k))).toEqual([b("b"), b("d")].map(toHex));
    tree.close();
  });

  it("scribbling on a returned hash does not change the tree", () => {
    const tree = seeded(make);
    const empty = make();
    const emptyHash = toHex(empty.hash);
    const c = tree.commit();
    const want = toHex(c.hash);
    const wantV1 = toHex(tree.at(1).hash);
    for (const h of [c.hash, tree.hash, tree.workingHash(), tree.at(c.version).hash, tree.at(1).hash, empty.hash, empty.workingHash()]) {
      h[0] = h[0]! ^ 0xff;
    }
    expect(toHex(tree.hash)).toBe(want);
    expect(toHex(tree.workingHash())).toBe(want);
    expect(toHex(tree.at(c.version).hash)).toBe(want);
    expect(toHex(tree.at(1).hash)).toBe(wantV1);
    expect(toHex(empty.hash)).toBe(emptyHash);
    expect(toHex(make().hash)).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    empty.close();
    tree.close();
  });

  it("a proof against an empty committed version: EMPTY_TREE", () => {
    const tree = make();
    tree.commit();
    expectCode(() => tree.proof(b("a")), "EMPTY_TREE");
    expectCode(() => tree.at(1).proof(b("a")), "EMPTY_TREE");
    tree.close();
  });
});

describe("Tree.memory options", () => {
  it("initialVersion 0, -1, 1.5, a string: INVALID_OPTIONS naming initialVersion", () => {
    for (const bad of [0, -1, 1.5, "5", Number.NaN, 2 ** 53]) {
      const err = expectCode(() => Tree.memory({ initialVersion: bad as number }), "INVALID_OPTIONS");
      expect(err.message).toContain("initialVersion");
    }
  });

  it("an unknown option: INVALID_OPTIONS naming the field", () => {
    const err = expectCode(() => Tree.memory({ bogus: 1 } as unknown as Parameters<typeof Tree.memory>[0]), "INVALID_OPTIONS");
    expect(err.message).toContain("bogus");
  });

  it("options that are not an object: INVALID_OPTIONS", () => {
    for (const bad of [5, "x", [1]]) {
      expectCode(() => Tree.memory(bad as unknown as Parameters<typeof Tree.memory>[0]), "INVALID_OPTIONS");
    }
  });

  it("no options, undefined and {} are all fine and start at version 1", () => {
    for (const t of [Tree.memory(), Tree.memory(undefined), Tree.memory({})]) {
      expect(t.version).toBe(0);
      expect(t.commit().version).toBe(1);
      t.close();
    }
  });

  it("initialVersion 5 makes the first commit version 5, then 6", () => {
    const tree = Tree.memory({ initialVersion: 5 });
    expect(tree.version).toBe(0);
    tree.set(b("a"), b("1"));
    const c = tree.commit();
    expect(c.version).toBe(5);
    expect(tree.version).toBe(5);
    expect(tree.commit().version).toBe(6);
    expect(tree.versions()).toEqual([5, 6]);
    expect(tree.at(5).get(b("a"))).toEqual(b("1"));
    expectCode(() => tree.at(1), "VERSION_NOT_FOUND");
    expectCode(() => tree.at(4), "VERSION_NOT_FOUND");
    // The leaf is written at version 5, so the hash differs from the same set at version 1.
    const plain = Tree.memory();
    plain.set(b("a"), b("1"));
    expect(toHex(plain.commit().hash)).not.toBe(toHex(c.hash));
    plain.close();
    tree.close();
  });
});

describe("the key and value limits are those of everything after set", () => {
  it("a key of MAX_KEY_BYTES and a long value pass set, commit, audit, export and import", async () => {
    const dir = tempDir();
    const tree = Tree.open(dir);
    const key = new Uint8Array(MAX_KEY_BYTES).fill(0x6b);
    const value = new Uint8Array(100_000).fill(7);
    tree.set(key, value);
    tree.set(b("a"), b("1"));
    const c = tree.commit();
    const view = tree.at(c.version);
    expect(view.audit().faults).toEqual([]);
    const wire = [...encodeItems(view.export())];
    tree.close();
    const copy = await Tree.import(tempDir(), decodeItems(wire), { version: c.version, expectedHash: c.hash });
    expect(copy.get(key)).toEqual(value);
    copy.close();
  });

  it("a MultiTree's store refuses a key over MAX_KEY_BYTES, and the app hash stays", () => {
    const multi = MultiTree.open(tempDir(), { stores: ["bank"] });
    multi.tree("bank").set(b("a"), b("1"));
    const working = toHex(multi.tree("bank").workingHash());
    expectCode(() => multi.tree("bank").set(new Uint8Array(MAX_KEY_BYTES + 1).fill(1), b("x")), "INVALID_ARGUMENT");
    expect(toHex(multi.tree("bank").workingHash())).toBe(working);
    const c = multi.commit();
    expect(toHex(c.hashes.get("bank")!)).toBe(working);
    multi.close();
  });
});

describe("opening a file that is not there", () => {
  it("read-only, is NOT_A_STORE (the file is missing), not an I/O failure; for a store file and a commit marker alike", () => {
    const dir = tempDir();
    const code = (fn: () => unknown): string | undefined => {
      try {
        fn();
      } catch (e) {
        return isIavlError(e) ? e.code : (e as Error).name;
      }
      return undefined;
    };
    expect(code(() => openReader(join(dir, "iavl.sqlite")))).toBe("NOT_A_STORE");
    expect(code(() => CommitMarker.open(join(dir, "commits.sqlite"), "normal", true))).toBe("NOT_A_STORE");
  });
});
