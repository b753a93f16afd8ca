import { describe, expect, it } from "vitest";
import { latin1Bytes } from "../src/base/bytes.js";
import { NodeTable } from "../src/tree/node-table.js";

/**
 * The slab grows in place (a resizable buffer) or, where that cannot be had, by a copy: either way every field a
 * node had before the growth is the same after it, and the hash area handed out afterwards is the grown one.
 */
describe("NodeTable growth", () => {
  for (const fixed of [false, true]) {
    it(`keeps every node's fields, key, value, hash and links across growths (${fixed ? "by a copy" : "in place"})`, () => {
      const t = new NodeTable({ stored: true, capacity: 16, fixed });
      const made: number[] = [];
      const hashOf = (k: number): Uint8Array => Uint8Array.from({ length: 32 }, (_, j) => (k * 31 + j) & 0xff);
      for (let k = 0; k < 5_000; k++) {
        const n = k % 3 === 0 ? t.keyedBranch(latin1Bytes(`b${k}`), k + 1, 1 + (k % 5), k + 2) : t.leaf(`k${k}`, Uint8Array.of(k & 0xff), k + 1);
        t.setHashBytes(n, hashOf(k));
        t.setSeq(n, k * 7);
        if (k % 3 === 0) t.linkLeft(n, k, k * 11);
        made.push(n);
      }
      made.forEach((n, k) => {
        expect(t.version(n)).toBe(k + 1);
        expect(t.key(n)).toBe(k % 3 === 0 ? `b${k}` : `k${k}`);
        expect(t.hashBytes(n)).toEqual(hashOf(k));
        expect(t.hashArea().subarray(t.hashAt(n), t.hashAt(n) + 32)).toEqual(hashOf(k));
        expect(t.seq(n)).toBe(k * 7);
        if (k % 3 === 0) {
          expect([t.height(n), t.size(n), t.leftVersion(n), t.leftSeq(n)]).toEqual([1 + (k % 5), k + 2, k, k * 11]);
        } else expect(t.value(n)).toEqual(Uint8Array.of(k & 0xff));
      });
      expect(t.live).toBe(5_000);
    });
  }
});

/**
 * Stubs (a parent's record of a child known only by node key) belong to their parent alone: a copy gets its own,
 * linking or loading the child drops it, and freeing the parent frees them, across growths by a copy too.
 */
describe("NodeTable stubs", () => {
  for (const fixed of [false, true]) {
    it(`are owned by one parent each and freed with it (${fixed ? "by a copy" : "in place"})`, () => {
      const t = new NodeTable({ stored: true, capacity: 16, fixed });
      const hash = Uint8Array.from({ length: 64 }, (_, j) => j);
      const parents: number[] = [];
      for (let k = 0; k < 2_000; k++) {
        const n = t.keyedBranch(latin1Bytes(`b${k}`), 9, 5, 40);
        t.linkLeft(n, 3, 100 + k);
        t.linkRight(n, 4, 200 + k);
        t.stub(n, true, 3, 4, 25, hash, 0);
        t.stub(n, false, 4, 3, 15, hash, 32);
        parents.push(n);
      }
      expect(t.live).toBe(3 * 2_000);
      const copies = parents.map((n) => t.copy(n, 10));
      expect(t.live).toBe(6 * 2_000);
      for (const [k, c] of copies.entries()) {
        const n = parents[k]!;
        expect(t.leftStub(c)).not.toBe(t.leftStub(n));
        for (const [p, s, h, size, at] of [[c, t.leftStub(c), 4, 25, 0], [c, t.rightStub(c), 3, 15, 32]] as const) {
          expect([t.version(s), t.height(s), t.size(s), t.hashed(s)]).toEqual([s === t.leftStub(p) ? 3 : 4, h, size, true]);
          expect(t.hashArea().subarray(t.hashAt(s), t.hashAt(s) + 32)).toEqual(hash.subarray(at, at + 32));
        }
      }
      // A child linked or loaded in its place drops the stub; freeing a parent frees what it still has.
      const child = t.leaf("x", undefined, 3);
      t.setLeft(copies[0]!, child);
      expect(t.leftStub(copies[0]!)).toBe(0);
      t.linkRight(copies[1]!, 5, 5);
      expect(t.rightStub(copies[1]!)).toBe(0);
      expect(t.live).toBe(6 * 2_000 - 2 + 1);
      for (const c of copies) t.retire(c);
      for (const n of parents) t.retire(n);
      expect(t.live).toBe(1);
    });
  }
});
