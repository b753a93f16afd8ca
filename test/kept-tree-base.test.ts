/**
 * The kept tree of `RebuiltTrees` (src/store/read/rebuild.ts) across a checkpoint written over several commits. A
 * reader that follows the head builds its tree while checkpoint c is still being written, so from the checkpoint
 * before (c0), and once c's flag lands a newer version replays on top of it: the tree keeps its links into c0's
 * rows. The rows c's checkpoint moved into pages of its own are orphans of c, and a prune past c deletes them; a
 * proof through a subtree the kept tree had not loaded then found them missing (CORRUPT). Layout-3 pages never
 * left such links (a moved page's root always has a replaced parent, whose rehash loaded the whole page), but the
 * branch rows of a layout-2 store did: its first layout-3 checkpoints moved every clean branch row under a changed
 * page into the new page. Since migration 006 the upgrade takes those rows into pages before any checkpoint runs, so
 * the case no longer arises; the test stays on the layout-2 fixture (upgraded on open, grown big enough that a
 * checkpoint takes several commits) as a guard of the rule, through both a read-only handle and the writer's own
 * views of older versions.
 */
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { iavlSpec, verifyMembership, verifyNonMembership } from "@confio/ics23";
import { describe, expect, it } from "vitest";
import { Tree, type ReadonlyTree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { applyVersion } from "./fixtures/version-ops.js";
import { inStoreFile } from "./helpers.js";
import { LAYOUT2_KEYS, LAYOUT2_LAST, LAYOUT2_OPS, LAYOUT2_OPTIONS } from "./fixtures/layout2-history.js";

const LAYOUT2_FIXTURE = fileURLToPath(new URL("./fixtures/layout2/iavl.sqlite.layout2", import.meta.url));
/** Keys added in the first version after the upgrade: the first layout-3 checkpoint then writes well over a step. */
const GROWTH = 4000;
const enc = new TextEncoder();
const dec = new TextDecoder();

/** Read from the store file beside its writer: the versions flagged as checkpoints, and the one still being written. */
function checkpoints(dir: string): { flagged: number[]; unfinished: number | undefined } {
  return inStoreFile(dir, (db) => {
    const flagged = db.prepare("SELECT version FROM versions WHERE checkpoint = 1 ORDER BY version").pluck().all() as number[];
    const unfinished = db.prepare("SELECT max(version) FROM pages WHERE version > ?").pluck().get(flagged[flagged.length - 1] ?? 0) as number | null;
    return { flagged, unfinished: unfinished ?? undefined };
  });
}

/** Proves each key on `view` and checks the proof against the view's root hash; returns what failed. */
function badProofs(view: ReadonlyTree, keys: Uint8Array[]): string[] {
  const bad: string[] = [];
  for (const key of keys) {
    try {
      const value = view.get(key);
      const proof = view.proof(key);
      const ok = value === undefined ? verifyNonMembership(proof, iavlSpec, view.hash, key) : verifyMembership(proof, iavlSpec, view.hash, key, value);
      if (!ok) bad.push(`${dec.decode(key)}: does not verify`);
    } catch (e) {
      bad.push(`${dec.decode(key)}: ${(e as { code?: string }).code ?? "no code"} ${(e as Error).message}`);
    }
  }
  return bad;
}

describe("a kept tree across a checkpoint written over several commits", () => {
  it("is rebuilt from that checkpoint once it lands: a prune past it deletes the rows the old tree linked to", async () => {
    const dir = tempDir();
    copyFileSync(LAYOUT2_FIXTURE, join(dir, "iavl.sqlite"));
    const w = Tree.open(dir, { ...LAYOUT2_OPTIONS, checkpointInterval: 10 });
    expect(w.version).toBe(LAYOUT2_LAST);
    // One handle follows the head; the other stops at the version whose checkpoint is being written, and keeps
    // reading it there.
    const r = Tree.openReadOnly(dir);
    const pinned = Tree.openReadOnly(dir);
    let pinnedAt: number | undefined;
    const probe = [enc.encode("k0"), enc.encode("k150"), enc.encode("k299")];
    let v = w.version;
    const commit = async (): Promise<void> => {
      v++;
      // The fixture's own history goes on (changes among the layout-2 rows), and the tree grows once.
      applyVersion(w, v, LAYOUT2_OPS, LAYOUT2_KEYS);
      if (v === LAYOUT2_LAST + 1) for (let i = 0; i < GROWTH; i++) w.set(enc.encode(`grown${i}`), enc.encode(`g${i}`));
      w.commit();
      await w.flush();
      expect(r.refresh()).toBe(v);
      if (pinnedAt === undefined) expect(pinned.refresh()).toBe(v);
      // The reader at the latest version, the writer's views one behind (the latest is its live tree), the pinned
      // handle where it stopped: each proof builds the kept tree there, or replays on it, or finds it kept.
      expect(badProofs(r, probe)).toEqual([]);
      expect(badProofs(w.at(v - 1), probe)).toEqual([]);
      expect(badProofs(pinned, probe)).toEqual([]);
    };
    // Commits until a checkpoint's flag lands in a later commit than its own version's.
    let spread: { c: number; landed: number } | undefined;
    let before = checkpoints(dir).flagged;
    while (spread === undefined) {
      await commit();
      const now = checkpoints(dir);
      if (pinnedAt === undefined && now.unfinished === v) pinnedAt = v;
      const c = now.flagged.find((n) => !before.includes(n));
      if (c !== undefined && c < v) spread = { c, landed: v };
      before = now.flagged;
      expect(v, "a checkpoint written over several commits").toBeLessThan(LAYOUT2_LAST + 40);
    }
    // Until it landed, the trees were rebuilt from the layout-2 checkpoint before it.
    expect(spread.c).toBeGreaterThan(LAYOUT2_LAST);
    expect(spread.landed - spread.c).toBeGreaterThan(1);
    expect(pinnedAt).toBe(spread.c);
    await commit();
    await w.prune(spread.c - 1);
    expect(w.versions()[0]).toBe(spread.c);
    // At the versions the kept trees were built for: every key of the layout-2 part, and some of the grown ones.
    const keys = [
      ...Array.from({ length: LAYOUT2_KEYS }, (_, i) => enc.encode(`k${i}`)),
      ...Array.from({ length: 100 }, (_, i) => enc.encode(`grown${i * 40}`)),
    ];
    for (const [name, view] of [
      ["the reader", r],
      ["the writer's view", w.at(v - 1)],
      ["the pinned reader", pinned],
    ] as const) {
      expect(badProofs(view, keys), name).toEqual([]);
      expect(view.audit(), name).toMatchObject({ ok: true, faults: [] });
    }
    expect(pinned.version).toBe(spread.c);
    for (const h of [r, pinned, w]) h.close();
  }, 120_000);
});
