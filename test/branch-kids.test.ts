/**
 * A branch row's record of its children (src/sqlite/branch-kids.ts): what a change past the memory budget trusts
 * instead of reading a sibling, so every damage to it must be refused when the row is read.
 */
import { describe, expect, it } from "vitest";
import { digestBytes, innerHashOf } from "../src/base/hash.js";
import { decodeKids, encodeKids } from "../src/sqlite/branch-kids.js";
import type { BranchRow } from "../src/sqlite/rows.js";

const left = new Uint8Array(32).fill(7);
const right = new Uint8Array(32).fill(9);
const both = Uint8Array.from([...left, ...right]);

function row(): BranchRow {
  const r: BranchRow = {
    version: 12,
    seq: 3,
    key: Uint8Array.of(1, 2, 3),
    height: 6,
    size: 40,
    hash: digestBytes(innerHashOf(6, 40, 12, both, 0, 32)),
    leftVersion: 11,
    leftSeq: 2_147_483_700,
    rightVersion: 12,
    rightSeq: 1,
    kids: null,
  };
  r.kids = encodeKids(r, { height: 5, size: 25, hashes: left, at: 0 }, { height: 4, size: 15, hashes: both, at: 32 });
  return r;
}

const corrupt = expect.objectContaining({ code: "CORRUPT" });

describe("a branch row's record of its children", () => {
  it("gives back the heights, sizes and hashes it was made from", () => {
    const r = row();
    const k = decodeKids(r, r.kids!);
    expect([k.leftHeight, k.rightHeight, k.leftSize, k.rightSize]).toEqual([5, 4, 25, 15]);
    expect(k.bytes.subarray(k.hashAt, k.hashAt + 32)).toEqual(left);
    expect(k.bytes.subarray(k.hashAt + 32, k.hashAt + 64)).toEqual(right);
  });

  it("is refused with CORRUPT for any one byte changed, in it or in the row's key and child links", () => {
    const r = row();
    for (let i = 0; i < r.kids!.length; i++) {
      const kids = r.kids!.slice();
      kids[i]! ^= 0x10;
      expect(() => decodeKids(r, kids), `byte ${i}`).toThrow(corrupt);
    }
    expect(() => decodeKids({ ...row(), key: Uint8Array.of(1, 2, 4) }, r.kids!)).toThrow(corrupt);
    expect(() => decodeKids({ ...row(), leftSeq: 2_147_483_701 }, r.kids!)).toThrow(corrupt);
    expect(() => decodeKids({ ...row(), rightVersion: 11 }, r.kids!)).toThrow(corrupt);
    expect(() => decodeKids(r, r.kids!.subarray(0, r.kids!.length - 1))).toThrow(corrupt);
    expect(() => decodeKids(r, Uint8Array.from([...r.kids!, 0]))).toThrow(corrupt);
  });

  it("is refused where the row's hash, height or size is not its children's", () => {
    const r = row();
    expect(() => decodeKids({ ...r, hash: new Uint8Array(32) }, r.kids!)).toThrow(corrupt);
    expect(() => decodeKids({ ...r, height: 7 }, r.kids!)).toThrow(corrupt);
    expect(() => decodeKids({ ...r, size: 41 }, r.kids!)).toThrow(corrupt);
    expect(() => decodeKids({ ...r, version: 13 }, r.kids!)).toThrow(corrupt);
  });
});
