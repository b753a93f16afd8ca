/**
 * The store side of the persistent section's growth, in its own process so that the RSS measured is the store's
 * alone: not what earlier sections left in the bench process, not the workload generator's live-key set (1M keys
 * are ~250 MB of JS objects), not the floor table's page cache. `node --import tsx bench/grow-child.ts <dir>`.
 *
 * The parent generates each version and writes it to this process's stdin as one frame (bench/grow-protocol.ts);
 * this process applies it to the `Tree.open` store `<dir>/store` (default options), commits, samples RSS after the
 * set/remove and after the commit, and answers one line `ok <ns>` with the set/remove + commit time. An empty frame
 * ends the run: the answer is then a `GrowResult` (bench/grow-protocol.ts) as JSON.
 * @module
 */
import { join } from "node:path";
import { Tree } from "../src/index.js";
import { rssSplit } from "./stores.js";
import type { GrowResult } from "./grow-protocol.js";

function main(): void {
  const dir = process.argv[2];
  if (dir === undefined) throw new Error("usage: grow-child.ts <dir>");
  const base = rssSplit();
  let peak = base;
  let peakVersion = 0;
  let peakHeap = 0;
  const tree = Tree.open(join(dir, "store"));
  const sample = (version: number): void => {
    const r = rssSplit();
    if (r.rss > peak.rss) {
      peak = r;
      peakVersion = version;
      peakHeap = process.memoryUsage().heapUsed / 2 ** 20;
    }
  };

  /** Applies one frame (without its length prefix); false when it was the end marker. */
  const apply = (f: Buffer): boolean => {
    const count = f.readUInt32LE(0);
    if (count === 0) return false;
    let p = 4;
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < count; i++) {
      const del = f[p++] === 1;
      const kl = f.readUInt32LE(p);
      p += 4;
      const key = f.subarray(p, p + kl);
      p += kl;
      if (del) {
        if (!tree.remove(key)) throw new Error("bench: tree remove of a live key found nothing");
      } else {
        const vl = f.readUInt32LE(p);
        p += 4;
        tree.set(key, f.subarray(p, p + vl)); // set copies key and value
        p += vl;
      }
    }
    const t1 = process.hrtime.bigint();
    sample(tree.version + 1);
    const t2 = process.hrtime.bigint();
    tree.commit();
    const t3 = process.hrtime.bigint();
    sample(tree.version);
    process.stdout.write(`ok ${Number(t1 - t0 + (t3 - t2))}\n`);
    return true;
  };

  let buf: Buffer = Buffer.alloc(0);
  process.stdin.on("data", (d: Buffer) => {
    buf = buf.length === 0 ? d : Buffer.concat([buf, d]);
    while (buf.length >= 4) {
      const len = buf.readUInt32LE(0);
      if (buf.length < 4 + len) break;
      const frame = buf.subarray(4, 4 + len);
      buf = buf.subarray(4 + len);
      if (!apply(frame)) {
        const r: GrowResult = { latest: tree.version, size: tree.size, base, peak, peakVersion, peakHeap };
        tree.close();
        process.stdout.write(`${JSON.stringify(r)}\n`);
        process.stdin.destroy();
        return;
      }
    }
  });
}

main();
