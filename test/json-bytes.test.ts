/** The pages of `/v1/range` and `/v1/history` are written straight into bytes; they must parse as the JSON they stand for. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { jsonBytes, type JsonPiece } from "../src/serve/json-bytes.js";

const hexOf = (u: Uint8Array): string => Buffer.from(u).toString("hex");

describe("jsonBytes", () => {
  it("writes ASCII text as it is, bytes as hex strings (views into larger buffers too) and null as null", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.option(fc.uint8Array({ maxLength: 300 })), fc.nat(7), fc.integer({ min: 0, max: 2 ** 53 - 1 }))), (entries) => {
        const pieces: JsonPiece[] = ["["];
        entries.forEach(([bytes, pad, n], i) => {
          // A view that starts `pad` bytes into its buffer, as SQLite's rows and subarrays give.
          const view = bytes === null ? null : new Uint8Array([...new Uint8Array(pad), ...bytes]).subarray(pad);
          pieces.push(`${i === 0 ? "" : ","}{"n":${n},"v":`, view, "}");
        });
        pieces.push("]");
        // Byte for byte what JSON.stringify writes, so nothing is left of the unfilled buffer either.
        const expected = JSON.stringify(entries.map(([bytes, , n]) => ({ n, v: bytes === null ? null : hexOf(bytes) })));
        expect(jsonBytes(pieces).toString("latin1")).toBe(expected);
      }),
    );
  });
});
