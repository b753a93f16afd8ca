import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { commitInfoHash, EMPTY_HASH, IavlError, isIavlError, MultiTree, toHex, Tree, type MultiTreeOptions } from "../src/index.js";
import { CommitMarker, MARKER_FILE } from "../src/sqlite/commit-marker.js";
import { tempDir } from "./backends.js";
import { b } from "./helpers.js";
import { applyVersion } from "./fixtures/version-ops.js";
import { node } from "./processes.js";

const sha = (...parts: Uint8Array[]): Buffer => {
  const h = createHash("sha256");
  for (const p of parts) h.update(p);
  return h.digest();
};
/** A CommitInfo leaf by hand: uvarint(len name) ‖ name ‖ uvarint(32) ‖ sha256(store hash); names here are < 128 bytes. */
const leaf = (name: string, hash: Uint8Array): Buffer => Buffer.concat([Buffer.from([name.length]), Buffer.from(name), Buffer.from([32]), sha(hash)]);
const L = (x: Uint8Array): Buffer => sha(Buffer.from([0]), x);
const I = (l: Uint8Array, r: Uint8Array): Buffer => sha(Buffer.from([1]), l, r);

describe("MultiTree", () => {
  it("commits all stores at one version with the Cosmos SDK CommitInfo app hash", () => {
    const dir = tempDir();
    const m = MultiTree.open(dir, { stores: ["staking", "bank", "acc"] });
    m.tree("bank").set(b("a"), b("1"));
    m.tree("staking").set(b("b"), b("2"));
    const c = m.commit();
    expect(c.version).toBe(1);
    const hb = Tree.memory();
    hb.set(b("a"), b("1"));
    const hs = Tree.memory();
    hs.set(b("b"), b("2"));
    expect(toHex(c.hashes.get("bank")!)).toBe(toHex(hb.commit().hash));
    const empty = sha(new Uint8Array(0));
    // Three stores sorted by name: acc, bank, staking; RFC 6962 splits 3 as 2 + 1.
    const expected = I(I(L(leaf("acc", empty)), L(leaf("bank", c.hashes.get("bank")!))), L(leaf("staking", hs.commit().hash)));
    expect(toHex(c.appHash)).toBe(expected.toString("hex"));
    expect(toHex(m.appHashAt(1))).toBe(expected.toString("hex"));
    // Two stores: one inner node over two leaves.
    const two = new Map([["x", b("h1")], ["y", b("h2")]]);
    expect(toHex(commitInfoHash(two))).toBe(I(L(leaf("x", b("h1"))), L(leaf("y", b("h2")))).toString("hex"));
    m.close();
    const again = MultiTree.open(dir, { stores: ["staking", "bank", "acc"] });
    expect(again.version).toBe(1);
    expect(toHex(again.appHash)).toBe(expected.toString("hex"));
    expect(() => again.tree("nope")).toThrowError(IavlError);
    again.close();
  });

  it("refuses bad options", () => {
    for (const stores of [[], ["a", "a"], ["bad/name"]]) {
      let code: string | undefined;
      try {
        MultiTree.open(tempDir(), { stores });
      } catch (e) {
        code = (e as IavlError).code;
      }
      expect(code).toBe("INVALID_OPTIONS");
    }
  });

  it("after SIGKILL during commits, every store reopens at the same version with its expected hash", async () => {
    const dir = tempDir();
    const child = fileURLToPath(new URL("./fixtures/multi-writer.ts", import.meta.url));
    const STORES = ["bank", "lockup", "staking"];
    const models = STORES.map(() => Tree.memory());
    const hashes: string[][] = STORES.map(() => [toHex(EMPTY_HASH)]);
    const extend = (v: number): void => {
      while (models[0]!.version < v) {
        const next = models[0]!.version + 1;
        models.forEach((t, i) => {
          applyVersion(t, next * 10 + i, 150);
          hashes[i]!.push(toHex(t.commit().hash));
        });
      }
    };
    // Each child is killed once it has printed its n-th commit since opening (none: as soon as it opened), so that
    // the kill lands in the commit after, however fast the machine.
    let guaranteed = 0;
    for (const commits of [0, 1, 3, 2, 4, 1, 0, 3, 2, 4]) {
      const p = node([child, dir]);
      const opened = Number((await p.line(/^opened (\d+)$/))[1]);
      if (commits > 0) await p.line(new RegExp(`^committed ${opened + commits}$`));
      p.p.kill("SIGKILL");
      const { signal } = await p.exited;
      if (signal !== "SIGKILL") throw new Error(p.stderr);
      const last = Math.max(opened, ...p.numbers(/^committed (\d+)$/));
      guaranteed = opened + commits;
      const multi = MultiTree.open(dir, { stores: STORES });
      expect(multi.version).toBeGreaterThanOrEqual(last);
      extend(multi.version);
      STORES.forEach((name, i) => {
        const t = multi.tree(name);
        expect(t.version).toBe(multi.version);
        expect(toHex(t.hash)).toBe(hashes[i]![multi.version]);
      });
      multi.close();
    }
    expect(models[0]!.version).toBeGreaterThanOrEqual(guaranteed);
    expect(guaranteed).toBeGreaterThan(3);
    // A safety net: every kill waits for a line the child printed, as slow as a busy machine makes it.
  }, 600_000);
});

const NAMES = ["acc", "bank", "staking"];

/** A closed multi-store of `versions` versions (more options: `extra`); the app hash of each version, by version. */
function build(dir: string, versions: number, extra: Partial<MultiTreeOptions> = {}): string[] {
  const m = MultiTree.open(dir, { stores: NAMES, ...extra });
  const app = [""];
  for (let v = 1; v <= versions; v++) {
    for (const n of NAMES) m.tree(n).set(b(`${n}-${v % 4}`), b(`${n}-value-${v}`));
    app.push(toHex(m.commit().appHash));
  }
  m.close();
  return app;
}

/** The code `fn` throws (undefined when it does not throw). */
function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    return isIavlError(e) ? e.code : String(e);
  }
  return undefined;
}

describe("MultiTree.rollback", () => {
  it("rolls back every store and the commit marker together; the folder reopens there and commits on", () => {
    const dir = tempDir();
    const app = build(dir, 6);
    const r = MultiTree.rollback(dir, 3);
    expect(r.version).toBe(3);
    expect(toHex(r.appHash)).toBe(app[3]);
    expect(r.stores.map((s) => [s.name, s.removed])).toEqual(NAMES.map((n) => [n, [4, 5, 6]]));
    const m = MultiTree.open(dir, { stores: NAMES });
    expect(m.version).toBe(3);
    expect(toHex(m.appHash)).toBe(app[3]);
    expect(toHex(m.appHashAt(3))).toBe(app[3]);
    expect(codeOf(() => m.appHashAt(4))).toBe("VERSION_NOT_FOUND");
    m.tree("bank").set(b("new"), b("1"));
    expect(m.commit().version).toBe(4);
    m.close();
    const ro = MultiTree.openReadOnly(dir);
    expect(ro.latest).toBe(4);
    ro.close();
  });

  it("a rollback cut short after the marker was lowered (a crash) is finished by the next open", () => {
    const dir = tempDir();
    const app = build(dir, 6);
    // What MultiTree.rollback(dir, 3) leaves when it dies after the marker and the first store.
    const marker = CommitMarker.open(join(dir, MARKER_FILE), "normal");
    marker.beginRollback(3, []);
    marker.close();
    expect(Tree.rollback(join(dir, "stores", "acc"), 3)).toBe(3);

    const m = MultiTree.open(dir, { stores: NAMES });
    expect(m.version).toBe(3);
    expect(toHex(m.appHash)).toBe(app[3]);
    for (const n of NAMES) expect(m.tree(n).versions(), n).toEqual([1, 2, 3]);
    m.close();
    const after = CommitMarker.open(join(dir, MARKER_FILE), "normal");
    expect(after.state()).toMatchObject({ whole: 3, rollingBackTo: undefined });
    after.close();
  });

  it("refuses, changing nothing: a version a store no longer holds, one after the last whole version, a live writer, a plain store", async () => {
    const dir = tempDir();
    build(dir, 6);
    const m = MultiTree.open(dir, { stores: NAMES });
    await m.tree("staking").prune(2);
    expect(codeOf(() => MultiTree.rollback(dir, 3))).toBe("LOCKED");
    m.close();
    let err: unknown;
    try {
      MultiTree.rollback(dir, 1);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(IavlError);
    expect((err as IavlError).code).toBe("VERSION_PRUNED");
    expect((err as IavlError).message).toContain("staking");
    expect(codeOf(() => MultiTree.rollback(dir, 7))).toBe("VERSION_NOT_FOUND");
    const plain = tempDir();
    Tree.open(plain).close();
    expect(codeOf(() => MultiTree.rollback(plain, 1))).toBe("NOT_A_STORE");
    const again = MultiTree.open(dir, { stores: NAMES });
    expect(again.version).toBe(6);
    for (const n of NAMES) expect(again.tree(n).version, n).toBe(6);
    again.close();
  });
});

describe("MultiTree.prune", () => {
  it("keeps the keepEvery snapshots: the multi-store's own by default, or those passed, with their app hashes", async () => {
    const dir = tempDir();
    const app = build(dir, 12, { keepEvery: 5, checkpointInterval: 3 });
    const m = MultiTree.open(dir, { stores: NAMES, keepEvery: 5, checkpointInterval: 3 });
    const phases: string[] = [];
    await m.prune(11, { onProgress: (_d, _t, phase) => phases.push(phase) });
    for (const n of NAMES) expect(m.tree(n).versions(), n).toEqual([5, 10, 12]);
    expect(toHex(m.appHashAt(5))).toBe(app[5]);
    expect(toHex(m.appHashAt(10))).toBe(app[10]);
    expect(phases.some((p) => p.startsWith("bank: "))).toBe(true);
    m.close();

    // Opened without keepEvery, the snapshots are kept only when asked.
    const dir2 = tempDir();
    build(dir2, 12, { checkpointInterval: 3 });
    const m2 = MultiTree.open(dir2, { stores: NAMES, checkpointInterval: 3 });
    await m2.prune(11, { keepEvery: 6 });
    for (const n of NAMES) expect(m2.tree(n).versions(), n).toEqual([6, 12]);
    m2.close();
  });

  // A commit stopped after its first store (the next store closed, as a crash would stop it) leaves that store one
  // version ahead; reopening brings it back to the last whole version, which its prunes must not have removed.
  // Seen in the simulator (seed 1518313472, keepRecent 1, a child killed mid-commit): the reopen threw VERSION_PRUNED.
  it("never prunes a store's last whole version, automatically (keepRecent 1) or asked while a commit is under way", async () => {
    /** Gives the first store, left at version 4 (the multi-store refuses work from here on, trees included). */
    const stopMidCommit = (m: MultiTree): Tree => {
      const acc = m.tree("acc");
      m.tree("bank").close();
      expect(codeOf(() => m.commit())).toBe("CLOSED");
      expect(acc.version).toBe(4);
      return acc;
    };
    const reopensWhole = (dir: string, app: string[]): void => {
      const again = MultiTree.open(dir, { stores: NAMES });
      expect(again.version).toBe(3);
      expect(toHex(again.appHash)).toBe(app[3]);
      again.close();
    };

    const auto = tempDir();
    const app = build(auto, 3, { keepRecent: 1 });
    const m = MultiTree.open(auto, { stores: NAMES, keepRecent: 1 });
    const acc = stopMidCommit(m);
    // Its commit asked acc's automatic prune: wait for it to remove version 2.
    while (acc.versions().includes(2)) await new Promise((r) => setTimeout(r, 5));
    expect(acc.versions()).toEqual([3, 4]);
    m.close();
    reopensWhole(auto, app);

    const asked = tempDir();
    expect(build(asked, 3)).toEqual(app);
    const m2 = MultiTree.open(asked, { stores: NAMES });
    // The prune reaches acc's prune thread once the commit below has put acc at version 4.
    const pruning = m2.prune(3);
    const acc2 = stopMidCommit(m2);
    await expect(pruning).rejects.toThrow(/closed/);
    expect(acc2.versions()).toEqual([3, 4]);
    m2.close();
    reopensWhole(asked, app);
  });
});

/**
 * Every file under `dir` with a digest of its bytes, to show that a refused open changed nothing on disk; but SQLite's
 * scratch files, which a read-only look at a store leaves (as `iavlite info` does) and its next writer removes.
 */
function diskState(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const path = join(e.parentPath, e.name);
    if (e.isFile() && !/-(wal|shm)$/.test(e.name)) out[relative(dir, path)] = sha(readFileSync(path)).toString("hex");
  }
  return out;
}

/** The error `fn` throws, which must be an IavlError. */
function errorOf(fn: () => unknown): IavlError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(IavlError);
    return e as IavlError;
  }
  throw new Error("expected an IavlError, nothing was thrown");
}

describe("MultiTree.open and the folder's stores", () => {
  it("refuses a misspelled, left-out or new store name with STORES_MISMATCH naming the folder's stores, changing nothing", () => {
    const dir = tempDir();
    const app = build(dir, 3);
    const before = diskState(dir);
    for (const stores of [["acc", "bank", "stakng"], ["acc", "bank"], [...NAMES, "gov"], ["bank", "staking", "acc", "x"]]) {
      const e = errorOf(() => MultiTree.open(dir, { stores }).close());
      expect(e.code, stores.join()).toBe("STORES_MISMATCH");
      expect(e.message).toContain("acc, bank, staking");
    }
    // addStores allows new names only: a store of the folder left out is still refused.
    expect(errorOf(() => MultiTree.open(dir, { stores: ["acc", "bank", "stakng"], addStores: ["stakng"] })).code).toBe("STORES_MISMATCH");
    expect(diskState(dir)).toEqual(before);
    // The folder's own list still opens it where it was, and it commits on.
    const m = MultiTree.open(dir, { stores: ["staking", "acc", "bank"] });
    expect([m.version, toHex(m.appHash)]).toEqual([3, app[3]]);
    expect(m.commit().version).toBe(4);
    m.close();
    expect(MultiTree.rollback(dir, 2).version).toBe(2);
  });

  it("adds the stores of addStores, which join at the next version; the same options open the folder again", () => {
    const dir = tempDir();
    build(dir, 2);
    const opts = { stores: [...NAMES, "gov"], addStores: ["gov"] };
    let m = MultiTree.open(dir, opts);
    expect(m.names).toEqual(["acc", "bank", "gov", "staking"]);
    m.tree("gov").set(b("g"), b("1"));
    expect(m.commit().version).toBe(3);
    expect(m.tree("gov").versions()).toEqual([3]);
    m.close();
    m = MultiTree.open(dir, opts);
    expect(m.version).toBe(3);
    m.close();
    m = MultiTree.open(dir, { stores: [...NAMES, "gov"] });
    expect(m.version).toBe(3);
    m.close();
    const e = errorOf(() => MultiTree.open(dir, { stores: NAMES, addStores: ["gov"] }));
    expect([e.code, e.message]).toEqual(["INVALID_OPTIONS", expect.stringContaining("addStores")]);
  });

  it("a folder that has not committed a version yet takes the stores it lacks, but never drops one", () => {
    const dir = tempDir();
    MultiTree.open(dir, { stores: ["a"] }).close();
    expect(errorOf(() => MultiTree.open(dir, { stores: ["b"] })).code).toBe("STORES_MISMATCH");
    const m = MultiTree.open(dir, { stores: ["a", "b"] });
    expect(m.commit().version).toBe(1);
    m.close();
    expect(errorOf(() => MultiTree.open(dir, { stores: ["a", "b", "c"] })).code).toBe("STORES_MISMATCH");
  });

  it("never mistakes a plain store's folder for a multi-store's, nor the other way", () => {
    const plain = tempDir();
    const t = Tree.open(plain);
    t.set(b("k"), b("v"));
    t.commit();
    t.close();
    const before = diskState(plain);
    const e = errorOf(() => MultiTree.open(plain, { stores: ["bank"] }));
    expect([e.code, e.message]).toEqual(["NOT_A_STORE", expect.stringContaining("Tree.open")]);
    expect(diskState(plain)).toEqual(before);
    expect(existsSync(join(plain, "stores"))).toBe(false);

    const multi = tempDir();
    build(multi, 1);
    const state = diskState(multi);
    for (const open of [() => Tree.open(multi).close(), () => Tree.openReadOnly(multi).close()]) {
      const err = errorOf(open);
      expect([err.code, err.message]).toEqual(["NOT_A_STORE", expect.stringContaining("multi-store")]);
    }
    expect(diskState(multi)).toEqual(state);
  });
});

describe("a closed MultiTree", () => {
  it("throws CLOSED with a plain message from every member, from no frame named like the static open; closing twice is harmless", async () => {
    const m = MultiTree.open(tempDir(), { stores: NAMES });
    m.commit();
    m.close();
    expect(() => m.close()).not.toThrow();
    const members: Array<[string, () => unknown]> = [
      ["version", () => m.version],
      ["appHash", () => m.appHash],
      ["names", () => m.names],
      ["tree", () => m.tree("bank")],
      ["commit", () => m.commit()],
      ["appHashAt", () => m.appHashAt(1)],
    ];
    const errors = members.map(([name, fn]) => [name, errorOf(fn)] as const);
    errors.push(["prune", (await m.prune(1).then(() => undefined, (e: unknown) => e)) as IavlError]);
    for (const [name, e] of errors) {
      expect([name, e.code, e.message]).toEqual([name, "CLOSED", "the multi-store is closed"]);
      expect(e.stack, name).not.toMatch(/\bat (MultiTree|Tree)\.open \(/);
    }
  });
});
