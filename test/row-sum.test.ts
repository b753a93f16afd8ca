/**
 * A leaves row's sum (src/sqlite/row-sum.ts) is the CRC-32 of the key, its length (uint32, big-endian), the version
 * (float64, big-endian) and the value, whether the row fits the scratch it is summed in with one call or not: stored
 * sums must read back the same from every version of the code.
 */
import { describe, expect, it } from "vitest";
import { crc32, rowSum } from "../src/sqlite/row-sum.js";
import { randomBytes, rng } from "./helpers.js";

function laidOut(key: Uint8Array, version: number, value: Uint8Array): number {
  const head = new Uint8Array(12);
  const view = new DataView(head.buffer);
  view.setUint32(0, key.length);
  view.setFloat64(4, version);
  return crc32(value, crc32(head, crc32(key)));
}

describe("rowSum", () => {
  it("sums the key, its length, the version and the value, short rows and rows past the scratch alike", () => {
    const next = rng(5);
    for (const [k, v] of [[56, 650], [1, 0], [56, 8_124], [56, 8_125], [65_535, 10], [300, 20_000]] as const) {
      const key = randomBytes(next, k);
      const value = randomBytes(next, v);
      const version = Math.floor(next() * 2 ** 40);
      expect(rowSum(key, version, value)).toBe(laidOut(key, version, value));
    }
    // A known answer, so that the layout itself cannot drift with its twin above.
    expect(rowSum(new Uint8Array([1, 2, 3]), 7, new Uint8Array([9]))).toBe(crc32(Uint8Array.from([1, 2, 3, 0, 0, 0, 3, 64, 28, 0, 0, 0, 0, 0, 0, 9])));
  });
});
