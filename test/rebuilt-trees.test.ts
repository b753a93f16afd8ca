/**
 * A read-only handle keeps the trees of the last versions it rebuilt (src/store/read/rebuild.ts): queries at any of
 * the last few heights, in any order, replay each version once, and every kept tree still answers exactly (values,
 * hashes, proofs) however many newer versions were replayed on top of it.
 */
import { describe, expect, it } from "vitest";
import { iavlSpec, verifyMembership } from "@confio/ics23";
import { toHex, Tree } from "../src/index.js";
import { replayedVersions } from "../src/store/read/rebuild.js";
import { tempDir } from "./backends.js";

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
/** A read that needs version `v`'s tree (a get is answered from the index of values). */
const treeRead = (r: ReturnType<typeof Tree.openReadOnly>, v: number): unknown => r.at(v).iterate().next();

/** A store of `versions` versions (none a checkpoint but by the interval), and each version's pairs as hex. */
function grown(versions: number): { dir: string; states: Array<Map<string, string>>; hashes: string[] } {
  const dir = tempDir();
  const t = Tree.open(dir, { checkpointInterval: 1_000 });
  const state = new Map<string, string>();
  const states: Array<Map<string, string>> = [new Map()];
  const hashes = [""];
  for (let v = 1; v <= versions; v++) {
    for (let i = 0; i < 40; i++) {
      const k = `key-${(v * 37 + i * 11) % 300}`;
      if ((v + i) % 7 === 0) {
        t.remove(enc(k));
        state.delete(toHex(enc(k)));
      } else {
        t.set(enc(k), enc(`v${v}-${i}`));
        state.set(toHex(enc(k)), toHex(enc(`v${v}-${i}`)));
      }
    }
    hashes.push(toHex(t.commit().hash));
    states.push(new Map(state));
  }
  t.close();
  return { dir, states, hashes };
}

describe("a reader's kept trees", () => {
  it("replay each of the last versions once, whatever order they are asked in", () => {
    const { dir } = grown(60);
    const r = Tree.openReadOnly(dir);
    try {
      // Closing the writer made version 60 a checkpoint; the versions before it replay from the first.
      const before = replayedVersions();
      treeRead(r, 59);
      expect(replayedVersions() - before).toBe(59);
      for (const v of [58, 45, 31, 50, 28, 59, 33]) treeRead(r, v);
      expect(replayedVersions() - before).toBe(59);
      // The checkpoint is replayed on top of the kept trees, not loaded beside them.
      treeRead(r, 60);
      expect(replayedVersions() - before).toBe(60);
      treeRead(r, 29);
      expect(replayedVersions() - before).toBe(60);
      // Below the kept trees: a rebuild, which keeps the versions up to it.
      treeRead(r, 20);
      expect(replayedVersions() - before).toBe(80);
      for (const v of [21, 25, 24]) treeRead(r, v);
      // 21 … 25 on top of 20, once each.
      expect(replayedVersions() - before).toBe(85);
    } finally {
      r.close();
    }
  });

  it("answer exactly at every kept version, asked in a shuffled order, while newer versions are replayed on top", () => {
    const { dir, states, hashes } = grown(80);
    const r = Tree.openReadOnly(dir);
    try {
      const order = [...Array(80).keys()].map((i) => i + 1).sort((a, b) => ((a * 7919) % 83) - ((b * 7919) % 83));
      for (const v of [...order, ...order.reverse()]) {
        const view = r.at(v);
        expect(toHex(view.hash)).toBe(hashes[v]);
        const got = new Map([...view.iterate()].map(([k, val]) => [toHex(k), toHex(val)]));
        expect(got).toEqual(states[v]);
        const key = enc(`key-${v % 300}`);
        const value = view.get(key);
        expect(value === undefined ? undefined : toHex(value)).toBe(states[v]!.get(toHex(key)));
        if (value !== undefined) expect(verifyMembership(view.proof(key), iavlSpec, view.hash, key, value)).toBe(true);
      }
    } finally {
      r.close();
    }
  });
});
