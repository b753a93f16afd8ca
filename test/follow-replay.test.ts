/**
 * A read-only handle that follows the writer between checkpoints replays only the versions since the tree it holds:
 * its answers must equal the writer's at every step, across removals, and across a rollback that replaces versions
 * the reader already replayed.
 */
import { iavlSpec, verifyMembership } from "@confio/ics23";
import { describe, expect, it } from "vitest";
import { toHex, Tree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { b } from "./helpers.js";

/** The reader's proof of `key` = `value` verifies against its hash (a proof needs the rebuilt tree). */
function proves(r: ReturnType<typeof Tree.openReadOnly>, key: Uint8Array, value: Uint8Array): void {
  expect(verifyMembership(r.proof(key), iavlSpec, r.hash, key, value)).toBe(true);
}

describe("a reader following versions between checkpoints", () => {
  it("matches the writer's hash and values at every version, through a rollback", () => {
    const dir = tempDir();
    // Each version in SQLite on commit()'s return, where the read-only handle reads it in step.
    const w = Tree.open(dir, { checkpointInterval: 1_000, commitJournal: false });
    const hashes: string[] = [""];
    const commit = (v: number): void => {
      w.set(b(`k-${v % 7}`), b(`v-${v}`));
      if (v % 3 === 0) w.remove(b(`k-${(v + 2) % 7}`));
      hashes[v] = toHex(w.commit().hash);
    };
    for (let v = 1; v <= 3; v++) commit(v);
    const r = Tree.openReadOnly(dir);
    try {
      for (let v = 4; v <= 25; v++) {
        commit(v);
        expect(r.refresh()).toBe(v);
        expect(toHex(r.hash)).toBe(hashes[v]);
        expect(r.get(b(`k-${v % 7}`))).toEqual(b(`v-${v}`));
        expect([...r.iterate()]).toEqual([...w.iterate()]);
        proves(r, b(`k-${v % 7}`), b(`v-${v}`));
      }
      w.close();
      expect(Tree.rollback(dir, 20)).toBe(5);
      const w2 = Tree.open(dir, { checkpointInterval: 1_000, commitJournal: false });
      for (let v = 21; v <= 26; v++) {
        w2.set(b(`k-${v % 7}`), b(`again-${v}`));
        const h = toHex(w2.commit().hash);
        expect(r.refresh()).toBe(v);
        expect(toHex(r.hash)).toBe(h);
        expect(r.get(b(`k-${v % 7}`))).toEqual(b(`again-${v}`));
        expect([...r.iterate()]).toEqual([...w2.iterate()]);
        proves(r, b(`k-${v % 7}`), b(`again-${v}`));
      }
      w2.close();
    } finally {
      r.close();
    }
  });
});
