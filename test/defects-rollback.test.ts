/**
 * A view of version v never answers with another history: once a rollback removed v (and v may have been committed
 * again with other content), reads of the old view throw VERSION_ROLLED_BACK; a read-only handle follows the
 * rollback on refresh().
 */
import { iavlSpec, verifyMembership } from "@confio/ics23";
import { describe, expect, it } from "vitest";
import { IavlError, toHex, Tree, type ErrorCode } from "../src/index.js";
import { tempDir } from "./backends.js";
import { b } from "./helpers.js";

const k = b("the-key");

/** The code of a read of a version that a rollback removed (a new code: not yet in ErrorCode). */
const ROLLED_BACK: ErrorCode = "VERSION_ROLLED_BACK";

/** A closed store with versions 1..10; `the-key` is `old-<v>` at version v. Returns each version's hash. */
function tenVersions(dir: string): string[] {
  const t = Tree.open(dir, { checkpointInterval: 3 });
  const hashes = [""];
  for (let v = 1; v <= 10; v++) {
    t.set(k, b(`old-${v}`));
    t.set(b(`other-${v % 4}`), b(`x-${v}`));
    hashes.push(toHex(t.commit().hash));
  }
  t.close();
  return hashes;
}

/** The code of the IavlError `fn` throws; fails the test when it returns (showing what it returned) or throws something else. */
function codeOf(what: string, fn: () => unknown): string {
  let r: unknown;
  try {
    r = fn();
  } catch (e) {
    if (e instanceof IavlError) return e.code;
    throw e;
  }
  const shown = r instanceof Uint8Array ? `bytes "${Buffer.from(r).toString("latin1")}"` : JSON.stringify(r);
  return `${what} returned ${shown}`;
}

describe("a view of a rolled-back version never answers with another history", () => {
  it("reads of a view of version 10 throw VERSION_ROLLED_BACK after rollback to 8 and two new commits", () => {
    const dir = tempDir();
    const oldHashes = tenVersions(dir);
    const r = Tree.openReadOnly(dir);
    const view = r.at(10);
    const view5 = r.at(5);
    expect(view.get(k)).toEqual(b("old-10"));

    expect(Tree.rollback(dir, 8)).toBe(2);
    const w = Tree.open(dir);
    w.set(k, b("new-9"));
    w.commit();
    w.set(k, b("new-10"));
    const { version, hash } = w.commit();
    expect(version).toBe(10);
    const newHash = toHex(hash);
    expect(newHash).not.toBe(oldHashes[10]);
    w.close();

    const codes = {
      get: codeOf("get", () => view.get(k)),
      has: codeOf("has", () => view.has(k)),
      hash: codeOf("hash", () => toHex(view.hash)),
      proof: codeOf("proof", () => view.proof(k)),
      iterate: codeOf("iterate", () => [...view.iterate()].map(([key, x]) => `${Buffer.from(key).toString()}=${Buffer.from(x).toString()}`)),
    };
    expect(codes).toEqual({ get: ROLLED_BACK, has: ROLLED_BACK, hash: ROLLED_BACK, proof: ROLLED_BACK, iterate: ROLLED_BACK });

    // A view of a version below the rollback target keeps working.
    expect(view5.get(k)).toEqual(b("old-5"));
    expect(toHex(view5.hash)).toBe(oldHashes[5]);
    expect(verifyMembership(view5.proof(k), iavlSpec, view5.hash, k, b("old-5"))).toBe(true);

    // The handle itself follows the rollback on refresh: version 10 is now the new one.
    expect(r.version).toBe(10);
    expect(r.refresh()).toBe(10);
    expect(toHex(r.hash)).toBe(newHash);
    expect(r.get(k)).toEqual(b("new-10"));
    expect(verifyMembership(r.proof(k), iavlSpec, r.hash, k, b("new-10"))).toBe(true);
    expect(r.at(10).get(k)).toEqual(b("new-10"));
    r.close();
  });

  it("refresh() moves a read-only handle back to the rollback target when nothing was committed since", () => {
    const dir = tempDir();
    const oldHashes = tenVersions(dir);
    const r = Tree.openReadOnly(dir);
    expect(r.version).toBe(10);
    Tree.rollback(dir, 8);
    expect(r.refresh()).toBe(8);
    expect(r.version).toBe(8);
    expect(toHex(r.hash)).toBe(oldHashes[8]);
    expect(r.get(k)).toEqual(b("old-8"));
    r.close();
  });
});
