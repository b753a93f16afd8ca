import { describe, expect, it } from "vitest";
import { toHex } from "../src/index.js";
import { backends } from "./backends.js";
import { b, goldenCases, treehashOps } from "./helpers.js";

describe.each(backends)("root hashes match cosmos/iavl ($name)", ({ make }) => {
  it("TestTreeHash: 4 versions of 4096 ops", () => {
    const tree = make();
    for (const v of treehashOps()) {
      for (const op of v.ops) {
        if (op[0] === "s") tree.set(op[1], op[2]);
        else tree.remove(op[1]);
      }
      expect(toHex(tree.workingHash())).toBe(v.expectHash);
      const c = tree.commit();
      expect(c.version).toBe(v.version);
      expect(toHex(c.hash)).toBe(v.expectHash);
      expect(tree.size).toBe(v.sizeAfter);
    }
    tree.close();
  });

  for (const g of goldenCases()) {
    it(`golden case ${g.name}`, () => {
      const tree = make();
      for (const v of g.versions) {
        for (const [op, k, val] of v.ops) {
          if (op === "s") tree.set(b(k), b(val ?? ""));
          else tree.remove(b(k));
        }
        const c = tree.commit();
        expect(c.version).toBe(v.version);
        expect(toHex(c.hash)).toBe(v.rootHash);
      }
      tree.close();
    });
  }

  it("key-i literals (SPEC §2)", () => {
    const tree = make();
    for (let i = 0; i < 100; i++) tree.set(b(`key-${i}`), b(`value-${i}`));
    expect(toHex(tree.commit().hash)).toBe("b01ccd167f03233bc51c44116d0420935826a533473ae39829556d0665bacda9");
    tree.set(b("key-0"), b("NEW_VALUE"));
    expect(toHex(tree.commit().hash)).toBe("b708c71ea143df334bb7dc9fbd7c47da3a3b16c2e15f2990e5beb3fabc8ae8ca");
    tree.close();
  });

  it("a version with no change keeps the root hash", () => {
    const tree = make();
    tree.set(b("a"), b("1"));
    const h1 = tree.commit().hash;
    const c2 = tree.commit();
    expect(c2.version).toBe(2);
    expect(toHex(c2.hash)).toBe(toHex(h1));
    tree.close();
  });
});
