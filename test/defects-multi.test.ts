/**
 * `MultiTree.open` never deletes a store: a lost marker file is rebuilt from stores that agree, and stores that
 * disagree are refused with CORRUPT and left as they are. A folder broken that way (stores rolled back one by one,
 * as `iavlite rollback --store` once did) is repaired by `MultiTree.rollback` to a version every store holds.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { commitInfoHash, IavlError, MultiTree, toHex, Tree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { b } from "./helpers.js";

const STORES = ["a", "b", "c"];

/** A closed multi-store with versions 1..3; returns the app hash of each version. */
function makeMulti(dir: string): string[] {
  const m = MultiTree.open(dir, { stores: STORES });
  const appHashes = [""];
  for (let v = 1; v <= 3; v++) {
    for (const name of STORES) m.tree(name).set(b(`${name}-key-${v}`), b(`${name}-value-${v}`));
    const c = m.commit();
    expect(c.version).toBe(v);
    expect(toHex(commitInfoHash(c.hashes))).toBe(toHex(c.appHash));
    appHashes.push(toHex(c.appHash));
  }
  m.close();
  return appHashes;
}

function removeMarker(dir: string): void {
  for (const f of ["commits.sqlite", "commits.sqlite-wal", "commits.sqlite-shm"]) rmSync(join(dir, f), { force: true });
}

describe("MultiTree.open never deletes stores", () => {
  it("a lost marker file is rebuilt from the stores, which keep all their versions and data", () => {
    const dir = tempDir();
    const appHashes = makeMulti(dir);
    removeMarker(dir);

    const m = MultiTree.open(dir, { stores: STORES });
    expect(m.version).toBe(3);
    for (const name of STORES) {
      const t = m.tree(name);
      expect(t.version, `store ${name}`).toBe(3);
      expect(t.versions(), `store ${name}`).toEqual([1, 2, 3]);
      for (let v = 1; v <= 3; v++) expect(t.get(b(`${name}-key-${v}`)), `store ${name} key ${v}`).toEqual(b(`${name}-value-${v}`));
    }
    // The marker knows version 3 again, with the app hash committed then.
    expect(toHex(m.appHashAt(3))).toBe(appHashes[3]);
    expect(toHex(commitInfoHash(new Map(STORES.map((n) => [n, m.tree(n).hash]))))).toBe(appHashes[3]);
    // And committing goes on at version 4.
    m.tree("a").set(b("a-key-4"), b("a-value-4"));
    const c = m.commit();
    expect(c.version).toBe(4);
    expect(toHex(m.appHashAt(4))).toBe(toHex(c.appHash));
    m.close();

    const again = MultiTree.open(dir, { stores: STORES });
    expect(again.version).toBe(4);
    expect(again.tree("b").get(b("b-key-1"))).toEqual(b("b-value-1"));
    again.close();
  });

  it("stores that disagree (marker lost, one store rolled back) are refused with CORRUPT naming each store's version, and left untouched", () => {
    const dir = tempDir();
    makeMulti(dir);
    removeMarker(dir);
    expect(Tree.rollback(join(dir, "stores", "b"), 2)).toBe(1);

    let caught: unknown;
    let opened: MultiTree | undefined;
    try {
      opened = MultiTree.open(dir, { stores: STORES });
    } catch (e) {
      caught = e;
    }
    const seen = opened === undefined ? "" : ` (it opened at version ${opened.version})`;
    opened?.close();
    expect(caught, `MultiTree.open must refuse${seen}`).toBeInstanceOf(IavlError);
    const err = caught as IavlError;
    expect(err.code).toBe("CORRUPT");
    // The message names each store with its version.
    expect(err.message).toMatch(/\ba\b[^,;]*\b3\b/);
    expect(err.message).toMatch(/\bb\b[^,;]*\b2\b/);
    expect(err.message).toMatch(/\bc\b[^,;]*\b3\b/);

    // Nothing was deleted or rolled back.
    const kept = Object.fromEntries(
      STORES.map((n) => {
        const r = Tree.openReadOnly(join(dir, "stores", n));
        const versions = r.versions();
        r.close();
        return [n, versions];
      }),
    );
    expect(kept).toEqual({ a: [1, 2, 3], b: [1, 2], c: [1, 2, 3] });
  });
});

describe("MultiTree.rollback repairs a folder whose stores were rolled back one by one", () => {
  it.each([
    ["one store rolled back", ["b"]],
    ["every store rolled back, the marker not", STORES],
  ])("%s: open refuses it, a folder rollback to a version every store holds makes it open there", (_case, alone) => {
    const dir = tempDir();
    const appHashes = makeMulti(dir);
    for (const n of alone) expect(Tree.rollback(join(dir, "stores", n), 2)).toBe(1);
    expect(() => MultiTree.open(dir, { stores: STORES }).close()).toThrowError(expect.objectContaining({ code: "CORRUPT" }) as Error);

    const r = MultiTree.rollback(dir, 2);
    expect(r.version).toBe(2);
    expect(toHex(r.appHash)).toBe(appHashes[2]);
    const m = MultiTree.open(dir, { stores: STORES });
    expect(m.version).toBe(2);
    expect(toHex(m.appHashAt(2))).toBe(appHashes[2]);
    expect(() => m.appHashAt(3)).toThrowError(expect.objectContaining({ code: "VERSION_NOT_FOUND" }) as Error);
    for (const n of STORES) expect(m.tree(n).versions(), `store ${n}`).toEqual([1, 2]);
    m.close();
  });
});
