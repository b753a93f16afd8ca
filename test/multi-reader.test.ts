/**
 * MultiTree.openReadOnly (MultiReader) and appProof: the versions every store holds whole, the recorded app hash, and
 * the app-level ICS23 proof of a store, verified by @confio/ics23 with tendermintSpec and by iavlite/verify (Go's
 * rules).
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { ics23, tendermintSpec, verifyMembership } from "@confio/ics23";
import { describe, expect, it } from "vitest";
import { appProof, commitInfoHash, MultiTree, toHex, Tree } from "../src/index.js";
import { verifyStoreInApp } from "../src/verify/index.js";
import { tempDir } from "./backends.js";
import { b, codeOf, rng } from "./helpers.js";
import { applyVersion } from "./fixtures/version-ops.js";

describe("appProof", () => {
  it("proves every store of 1 to 17 stores against the CommitInfo hash, and nothing else", () => {
    const rand = rng(5);
    for (let n = 1; n <= 17; n++) {
      const stores = new Map<string, Uint8Array>();
      // Names of varied length and order, so that the sort by bytes matters.
      for (let i = 0; i < n; i++) stores.set(`${"zyxwvutsrq"[i % 10]}${"s".repeat(i % 3)}${i}`, Uint8Array.from({ length: 32 }, () => Math.floor(rand() * 256)));
      const root = commitInfoHash(stores);
      for (const [name, hash] of stores) {
        const p = appProof(stores, name);
        // Through the wire form, as a client gets it.
        const bytes = ics23.CommitmentProof.encode(p).finish();
        const wire = ics23.CommitmentProof.decode(bytes);
        expect(verifyMembership(wire, tendermintSpec, root, b(name), hash)).toBe(true);
        // And with Go's rules too (iavlite/verify applies them): a right child's step has no suffix field at all.
        expect(verifyStoreInApp(bytes, root, name, hash), `${name} of ${n} stores`).toBe(true);
        const other = hash.slice();
        other[0]! ^= 1;
        expect(verifyMembership(wire, tendermintSpec, root, b(name), other)).toBe(false);
        expect(verifyMembership(wire, tendermintSpec, root, b(`${name}x`), hash)).toBe(false);
      }
    }
    expect(codeOf(() => appProof(new Map([["a", new Uint8Array(32)]]), "b"))).toBe("INVALID_ARGUMENT");
  });
});

describe("MultiTree.openReadOnly", () => {
  const STORES = ["bank", "lockup", "staking"];

  it("reads the versions every store holds whole, with the recorded app hash and proofs of each store", async () => {
    const dir = tempDir();
    const w = MultiTree.open(dir, { stores: STORES, checkpointInterval: 3 });
    const appHashes: string[] = [""];
    const commit = (): void => {
      const v = w.version + 1;
      STORES.forEach((s, i) => applyVersion(w.tree(s), v * 10 + i, 60, 300));
      appHashes.push(toHex(w.commit().appHash));
    };
    for (let i = 0; i < 6; i++) commit();
    const r = MultiTree.openReadOnly(dir);
    expect(r.multi).toBe(true);
    expect(r.names).toEqual(STORES);
    expect([r.latest, r.earliest()]).toEqual([6, 1]);
    commit();
    expect(r.latest).toBe(6);
    expect(codeOf(() => r.at("bank", 7))).toBe("VERSION_NOT_FOUND");
    expect(r.refresh()).toBe(7);
    for (let v = 1; v <= 7; v++) {
      const app = r.appHashAt(v)!;
      expect(toHex(app)).toBe(appHashes[v]);
      expect(toHex(commitInfoHash(r.storeHashes(v)))).toBe(appHashes[v]);
      for (const s of STORES) {
        const proof = r.appProof(v, s);
        expect(verifyMembership(proof, tendermintSpec, app, b(s), r.at(s, v).hash)).toBe(true);
        // Kept proofs are the same answer.
        expect(r.appProof(v, s)).toBe(proof);
      }
    }
    await w.prune(3);
    expect(r.earliest()).toBe(4);
    expect(codeOf(() => r.at("bank", 2).get(b("k1")))).toBe("VERSION_PRUNED");
    expect(codeOf(() => r.appProof(2, "bank"))).toBe("VERSION_PRUNED");
    expect(codeOf(() => r.store("nope"))).toBe("INVALID_ARGUMENT");
    w.close();
    r.close();
    expect(codeOf(() => r.latest)).toBe("CLOSED");

    // Only some stores served: the others still count in the app hash and its proofs.
    const some = MultiTree.openReadOnly(dir, { stores: ["staking"] });
    expect(some.names).toEqual(["staking"]);
    expect(codeOf(() => some.store("bank"))).toBe("INVALID_ARGUMENT");
    expect(verifyMembership(some.appProof(7, "staking"), tendermintSpec, some.appHashAt(7)!, b("staking"), some.at("staking", 7).hash)).toBe(true);
    some.close();
    expect(codeOf(() => MultiTree.openReadOnly(dir, { stores: ["nope"] }))).toBe("INVALID_OPTIONS");
    expect(codeOf(() => MultiTree.openReadOnly(dir, { stores: [] }))).toBe("INVALID_OPTIONS");
    expect(codeOf(() => MultiTree.openReadOnly(dir, { nope: 1 } as never))).toBe("INVALID_OPTIONS");
  });

  it("reads a plain store folder as one store named after it, with no app hash", () => {
    const dir = join(tempDir(), "state");
    mkdirSync(dir);
    const t = Tree.open(dir);
    t.set(b("a"), b("1"));
    const { hash } = t.commit();
    const r = MultiTree.openReadOnly(dir);
    expect([r.multi, r.names, r.latest]).toEqual([false, ["state"], 1]);
    expect(r.at("state", 1).hash).toEqual(hash);
    expect(r.appHashAt(1)).toBeNull();
    expect(codeOf(() => r.appProof(1, "state"))).toBe("INVALID_ARGUMENT");
    r.close();
    t.close();
    expect(codeOf(() => MultiTree.openReadOnly(tempDir()))).toBe("NOT_A_STORE");
  });
});
