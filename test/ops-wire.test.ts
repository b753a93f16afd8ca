/**
 * The replica feed's frames (src/sync/ops-wire.ts): a frame made of parts, as the service streams it, is the frame
 * encodeFeedVersion makes, and it decodes back to the version, for values of every size around where a value stops
 * being copied in and becomes a part of its own.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeFeedVersion, encodeFeedVersion, feedFrames, feedVersionParts, type FeedVersion } from "../src/sync/ops-wire.js";

const sizes = fc.constantFrom(0, 1, 127, 128, 1023, 1024, 1025, 16_384, 70_000);

const version: fc.Arbitrary<FeedVersion> = fc.record({
  version: fc.integer({ min: 1, max: 2 ** 40 }),
  hash: fc.uint8Array({ minLength: 32, maxLength: 32 }),
  appHash: fc.option(fc.uint8Array({ minLength: 32, maxLength: 32 }), { nil: null }),
  ops: fc.array(
    fc.record({
      key: fc.uint8Array({ minLength: 1, maxLength: 300 }),
      // Large values of one byte repeated: random ones cost the generator far more than the test.
      value: fc.option(
        fc.tuple(sizes, fc.integer({ min: 0, max: 255 })).map(([n, b]) => new Uint8Array(n).fill(b)),
        { nil: null },
      ),
    }),
    { maxLength: 40 },
  ),
});

/** Byte equality, without a deep comparison of megabytes element by element. */
const same = (a: Uint8Array, b: Uint8Array): boolean => Buffer.compare(a, b) === 0;

/** The frame's body: what follows its length prefix. */
function body(frame: Uint8Array): Uint8Array {
  let p = 0;
  while (frame[p]! & 0x80) p++;
  return frame.subarray(p + 1);
}

describe("feed frames", () => {
  it("made of parts are the frame, and decode back to the version", async () => {
    await fc.assert(
      fc.asyncProperty(version, async (v) => {
        const parts = [...feedVersionParts(v)];
        const frame = encodeFeedVersion(v);
        expect(same(Buffer.concat(parts), frame)).toBe(true);
        // Large values go out as the caller's own arrays, not copies.
        for (const op of v.ops) if (op.value !== null && op.value.length >= 1024) expect(parts).toContain(op.value);
        const back = decodeFeedVersion(body(frame));
        expect(back.version).toBe(v.version);
        expect(same(back.hash, v.hash)).toBe(true);
        expect(back.appHash === null ? v.appHash === null : v.appHash !== null && same(back.appHash, v.appHash)).toBe(true);
        expect(back.ops.length).toBe(v.ops.length);
        back.ops.forEach((o, i) => {
          const want = v.ops[i]!;
          expect(same(o.key, want.key)).toBe(true);
          expect(o.value === null ? want.value === null : want.value !== null && same(o.value, want.value)).toBe(true);
        });
        // Streamed part by part, as the service sends them, they are read back as one frame.
        const got: Uint8Array[] = [];
        for await (const f of feedFrames((async function* () {
          yield* parts;
        })())) got.push(f);
        expect(got.length).toBe(1);
        expect(same(got[0]!, body(frame))).toBe(true);
      }),
      { numRuns: 150 },
    );
  });
});
