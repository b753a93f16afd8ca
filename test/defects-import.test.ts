/**
 * Imports leave nothing behind: not the hidden temporary folder of an import that was killed, not a table per
 * range of node versions, not a folder for options that are refused.
 */
import { existsSync, readdirSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { IavlError, toHex, Tree, type ExportNode } from "../src/index.js";
import { tempDir } from "./backends.js";
import { b, inStoreFile } from "./helpers.js";
import { node } from "./processes.js";

const child = fileURLToPath(new URL("./fixtures/slow-import.ts", import.meta.url));

/** Hidden import folders of `target` in its parent folder. */
function leftovers(target: string): string[] {
  const prefix = `.${basename(target)}.import-`;
  return readdirSync(dirname(target)).filter((f) => f.startsWith(prefix));
}

/** A small committed memory tree and its version. */
function smallTree(keys: number): { tree: Tree; version: number; hash: Uint8Array } {
  const tree = Tree.memory();
  for (let i = 0; i < keys; i++) tree.set(b(`k-${String(i).padStart(5, "0")}`), b(`v-${i}`));
  const { version, hash } = tree.commit();
  return { tree, version, hash };
}

/** Runs the import child into `target` and SIGKILLs it mid-way: once it has fed 2,000 nodes and feeds no more. */
async function importAndKill(target: string): Promise<{ fed: number; seen: string[] }> {
  const p = node([child, target]);
  await p.line(/^fed 2000$/);
  const seen = leftovers(target);
  p.p.kill("SIGKILL");
  const { signal } = await p.exited;
  if (signal !== "SIGKILL") throw new Error(`the import child exited by itself: ${p.stderr}`);
  return { fed: Math.max(...p.numbers(/^fed (\d+)$/)), seen };
}

describe("imports leave nothing behind", () => {
  it("after an import was SIGKILLed, a new import into the same target succeeds and removes the killed one's temporary folder", async () => {
    const target = join(tempDir(), "snapshot");
    const { fed, seen } = await importAndKill(target);
    expect(fed).toBeGreaterThanOrEqual(2000);
    // The killed import left its hidden temporary folder (and no store at the target).
    expect(seen.length).toBe(1);
    expect(leftovers(target)).toEqual(seen);
    expect(existsSync(join(target, "iavl.sqlite"))).toBe(false);

    const { tree, version, hash } = smallTree(500);
    const t = await Tree.import(target, tree.at(version).export(), { version, expectedHash: hash });
    expect(toHex(t.hash)).toBe(toHex(hash));
    expect(t.get(b("k-00042"))).toEqual(b("v-42"));
    t.close();
    expect(leftovers(target), "hidden import folders left beside the target").toEqual([]);
  }, 30_000);

  it("an import at version 50000 with node versions spread over 1..50000 does not create a table per range of versions", async () => {
    const { tree, version } = smallTree(2000);
    // Give the leaves versions spread over 1..50000 and each inner node the larger of its children's versions (an
    // importer requires a node's version ≥ its children's); the post-order stream makes that one pass with a stack.
    const rewritten: ExportNode[] = [];
    const stack: number[] = [];
    let leaf = 0;
    for (const n of tree.at(version).export()) {
      let v: number;
      if (n.height === 0) v = 1 + Math.floor((leaf++ * 49_999) / 1999);
      else {
        const r = stack.pop()!;
        const l = stack.pop()!;
        v = Math.max(l, r);
      }
      stack.push(v);
      rewritten.push({ ...n, version: v });
    }
    expect(new Set(rewritten.map((n) => Math.floor(n.version / 1000))).size).toBeGreaterThan(45);

    const dir = join(tempDir(), "spread");
    const t = await Tree.import(dir, rewritten, { version: 50_000 });
    expect(t.version).toBe(50_000);
    expect(t.size).toBe(2000);
    expect(t.get(b("k-01234"))).toEqual(b("v-1234"));
    t.close();
    const tables = inStoreFile(dir, (db) => db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table'").pluck().get() as number);
    expect(tables).toBeLessThan(20);
  }, 30_000);

  it("version 0 is refused with IavlError and leaves nothing in the target folder (already passes: a guard)", async () => {
    const { tree, version } = smallTree(50);
    for (const make of [true, false]) {
      const parent = tempDir();
      const dir = join(parent, "target");
      if (make) Tree.open(join(parent, "unused")).close(); // an unrelated store beside it stays as it is
      let caught: unknown;
      try {
        await Tree.import(dir, tree.at(version).export(), { version: 0 });
      } catch (e) {
        caught = e;
      }
      expect(caught).toBeInstanceOf(IavlError);
      expect(["INVALID_OPTIONS", "INVALID_ARGUMENT"]).toContain((caught as IavlError).code);
      expect(existsSync(dir)).toBe(false);
      expect(leftovers(dir)).toEqual([]);
      expect(readdirSync(parent).sort()).toEqual(make ? ["unused"] : []);
    }
  });
});
