import { describe, expect, it } from "vitest";
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
        const n = k % 3 === 0 ? t.keyedBranch(`b${k}`, k + 1, 1 + (k % 5), k + 2) : t.leaf(`k${k}`, Uint8Array.of(k & 0xff), k + 1);
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
