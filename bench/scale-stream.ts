/**
 * The scale data's grown tree as a state-sync stream, made without growing it: keys 0 … n − 1 of bench/scale-data.ts
 * sorted, each with the value and version growth gives it ({@link setIn}), laid out as a balanced tree in post-order
 * (each subtree split at its middle key), for `Tree.import`. At 10M keys growing a store takes over an hour on this
 * machine; importing this takes minutes, and leaves the same layout a checkpoint writes (pages under a spine).
 * @module
 */
import type { ExportNode } from "../src/index.js";
import { keyOf, setIn, valueOf } from "./scale-data.js";

const KEY = 56;

/** Keys 0 … n − 1: their bytes back to back by number, and which key comes at each place in key order. */
function sortedKeys(n: number): { keys: Buffer; index: Int32Array } {
  if (n >= 2 ** 24) throw new Error("bench: at most 2^24 keys");
  // Sort by the first 40 bits with the index in the low 24 (one native sort), then settle equal prefixes by the
  // whole key: among 10M hashed keys a few dozen pairs share 40 bits.
  const packed = new BigUint64Array(n);
  const keys = Buffer.allocUnsafe(n * KEY);
  for (let i = 0; i < n; i++) {
    const k = keyOf(i);
    keys.set(k, i * KEY);
    packed[i] = (BigInt(k[0]! * 2 ** 32 + k[1]! * 2 ** 24 + k[2]! * 2 ** 16 + k[3]! * 2 ** 8 + k[4]!) << 24n) | BigInt(i);
  }
  packed.sort();
  const index = new Int32Array(n);
  for (let p = 0; p < n; p++) index[p] = Number(packed[p]! & 0xffffffn);
  const key = (i: number): Buffer => keys.subarray(i * KEY, i * KEY + KEY);
  for (let p = 0; p < n - 1; ) {
    let q = p + 1;
    while (q < n && packed[q]! >> 24n === packed[p]! >> 24n) q++;
    if (q - p > 1) index.subarray(p, q).sort((a, b) => Buffer.compare(key(a), key(b)));
    p = q;
  }
  return { keys, index };
}

/**
 * The nodes of the tree of keys 0 … n − 1 grown `perVersion` a version, in post-order: leaves at the version growth
 * set them in, a branch at the newer of its children's, its key the first of its right subtree.
 */
export function* scaleStream(n: number, perVersion: number): Generator<ExportNode> {
  const { keys, index } = sortedKeys(n);
  const keyAt = (p: number): Uint8Array => keys.subarray(index[p]! * KEY, index[p]! * KEY + KEY);
  // An explicit stack of ranges [lo, hi) with the step each is at (0: left next, 1: right next, 2: itself), and one
  // of the finished children's heights and versions: 20M nodes through nested generators would cost a frame each.
  const depth = 64;
  const [lo, hi, step] = [new Int32Array(depth), new Int32Array(depth), new Uint8Array(depth)];
  const [heights, versions] = [new Int32Array(depth), new Int32Array(depth)];
  let top = 0;
  let done = 0;
  [lo[0], hi[0], step[0]] = [0, n, 0];
  while (top >= 0) {
    const [a, b] = [lo[top]!, hi[top]!];
    const mid = a + Math.floor((b - a) / 2);
    if (b - a === 1) {
      const i = index[a]!;
      const version = setIn(i, perVersion);
      yield { key: keyAt(a), value: valueOf(i, version), version, height: 0 };
      [heights[done], versions[done]] = [0, version];
      done++;
      top--;
    } else if (step[top] === 0 || step[top] === 1) {
      const left = step[top] === 0;
      step[top]!++;
      top++;
      [lo[top], hi[top], step[top]] = left ? [a, mid, 0] : [mid, b, 0];
    } else {
      done -= 2;
      const height = 1 + Math.max(heights[done]!, heights[done + 1]!);
      const version = Math.max(versions[done]!, versions[done + 1]!);
      yield { key: keyAt(mid), version, height };
      [heights[done], versions[done]] = [height, version];
      done++;
      top--;
    }
  }
}
