/**
 * The pipe protocol between the persistent section and bench/grow-child.ts (kept apart so that importing it does not
 * start a child's main loop).
 * @module
 */
import type { Change } from "./workload.js";

/** What the child reports at the end. */
export interface GrowResult {
  latest: number;
  size: number;
  base: { rss: number; anon: number; file: number };
  peak: { rss: number; anon: number; file: number };
  /** The version being built when RSS peaked. */
  peakVersion: number;
  /** V8 heap used at the peak sample, MiB. */
  peakHeap: number;
}

/**
 * One version as bytes: u32 count, then per change u8 delete, u32 key length, key, and for sets u32 value length,
 * value (little-endian). A count of 0 ends the run. The whole frame is prefixed by its u32 byte length.
 */
export function encodeFrame(changes: readonly Change[]): Buffer {
  let n = 8;
  for (const c of changes) n += 5 + c.key.length + (c.delete ? 0 : 4 + c.value!.length);
  const b = Buffer.allocUnsafe(n);
  b.writeUInt32LE(n - 4, 0);
  b.writeUInt32LE(changes.length, 4);
  let p = 8;
  for (const c of changes) {
    b[p++] = c.delete ? 1 : 0;
    b.writeUInt32LE(c.key.length, p);
    p += 4;
    b.set(c.key, p);
    p += c.key.length;
    if (!c.delete) {
      b.writeUInt32LE(c.value!.length, p);
      p += 4;
      b.set(c.value!, p);
      p += c.value!.length;
    }
  }
  return b;
}
