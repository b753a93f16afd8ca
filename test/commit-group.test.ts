/**
 * Groups of commits (`Tree.group`, `MultiTree.group`), which a replica uses to apply many versions per SQLite
 * transaction: the versions of a group reach other connections only together, with the hashes of commits made one
 * by one; what `fn` throws comes out after the versions it committed landed; a crash anywhere in a group (SIGKILL,
 * or a multi-store's landing cut between its stores) reopens at a version that landed whole.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { EMPTY_HASH, MultiTree, toHex, Tree } from "../src/index.js";
import { CommitMarker, MARKER_FILE } from "../src/sqlite/commit-marker.js";
import { tempDir } from "./backends.js";
import { b } from "./helpers.js";
import { applyVersion } from "./fixtures/version-ops.js";
import { node } from "./processes.js";

const NAMES = ["acc", "bank", "staking"];

/** Sets a few keys of every store of `m` for version `v`. */
function change(m: MultiTree, v: number): void {
  for (const n of NAMES) m.tree(n).set(b(`${n}-${v % 4}`), b(`${n}-value-${v}`));
}

/** Versions 1..versions of {@link change}, committed one by one into a new multi-store; the app hashes by version. */
function oneByOne(versions: number): string[] {
  const m = MultiTree.open(tempDir(), { stores: NAMES });
  const app = [""];
  for (let v = 1; v <= versions; v++) {
    change(m, v);
    app.push(toHex(m.commit().appHash));
  }
  m.close();
  return app;
}

describe("Tree.group", () => {
  it("lands the versions it commits together, with the hashes of commits made one by one", () => {
    const dir = tempDir();
    const t = Tree.open(dir);
    const single = Tree.memory();
    const hashes = [toHex(EMPTY_HASH)];
    for (let v = 1; v <= 8; v++) {
      applyVersion(single, v, 50, 40);
      hashes.push(toHex(single.commit().hash));
    }
    applyVersion(t, 1, 50, 40);
    t.commit();
    const reader = Tree.openReadOnly(dir);
    try {
      const got = t.group(() => {
        for (let v = 2; v <= 5; v++) {
          applyVersion(t, v, 50, 40);
          expect(toHex(t.commit().hash)).toBe(hashes[v]);
          // Another connection sees none of the group yet; this tree reads its own versions.
          expect(reader.refresh()).toBe(1);
          expect(toHex(t.at(v).hash)).toBe(hashes[v]);
        }
        return "done";
      });
      expect(got).toBe("done");
      expect(reader.refresh()).toBe(5);
      for (let v = 1; v <= 5; v++) expect(toHex(reader.at(v).hash)).toBe(hashes[v]);
      // What fn throws comes out once the versions it committed have landed.
      expect(() =>
        t.group(() => {
          applyVersion(t, 6, 50, 40);
          t.commit();
          applyVersion(t, 7, 50, 40);
          throw new Error("stop here");
        }),
      ).toThrow("stop here");
      expect(reader.refresh()).toBe(6);
      // The working changes of version 7 were not committed: they stay the tree's, as after any commit.
      expect(toHex(t.commit().hash)).toBe(hashes[7]);
      expect(() => t.group(() => t.group(() => 1))).toThrow(/already open/);
    } finally {
      reader.close();
      t.close();
    }
    const again = Tree.open(dir);
    expect([again.version, toHex(again.hash)]).toEqual([7, hashes[7]]);
    again.close();
  });
});

describe("MultiTree.group", () => {
  it("lands every store and the marker's rows together", () => {
    const app = oneByOne(7);
    const dir = tempDir();
    const m = MultiTree.open(dir, { stores: NAMES });
    change(m, 1);
    m.commit();
    const reader = MultiTree.openReadOnly(dir);
    try {
      m.group(() => {
        for (let v = 2; v <= 6; v++) {
          change(m, v);
          expect(toHex(m.commit().appHash)).toBe(app[v]);
          expect(toHex(m.appHashAt(v))).toBe(app[v]);
          expect(reader.refresh()).toBe(1);
        }
      });
      expect(reader.refresh()).toBe(6);
      for (let v = 1; v <= 6; v++) expect(toHex(reader.appHashAt(v)!)).toBe(app[v]);
      // An empty group changes nothing.
      expect(m.group(() => m.version)).toBe(6);
      change(m, 7);
      expect(toHex(m.commit().appHash)).toBe(app[7]);
    } finally {
      reader.close();
      m.close();
    }
    const again = MultiTree.open(dir, { stores: NAMES });
    expect(again.version).toBe(7);
    for (let v = 1; v <= 7; v++) expect(toHex(again.appHashAt(v))).toBe(app[v]);
    again.close();
  });

  /** A folder where versions 3–6 landed as a group in every store, and the marker as a crash before its rows left it. */
  function landedButUnmarked(): { dir: string; app: string[] } {
    const app = oneByOne(6);
    const dir = tempDir();
    const m = MultiTree.open(dir, { stores: NAMES });
    for (let v = 1; v <= 2; v++) {
      change(m, v);
      m.commit();
    }
    m.group(() => {
      for (let v = 3; v <= 6; v++) {
        change(m, v);
        m.commit();
      }
    });
    m.close();
    // The marker as MultiTree.group leaves it between its begin of version 6 and its rows: 2 whole, 6 begun.
    const marker = CommitMarker.open(join(dir, MARKER_FILE), "normal");
    marker.beginRollback(2, []);
    marker.endRollback();
    marker.begin(6);
    expect(marker.state()).toMatchObject({ whole: 2, pending: 6 });
    marker.close();
    return { dir, app };
  }

  it("reopened after a crash once every store landed, completes the marker's rows of the whole group", () => {
    const { dir, app } = landedButUnmarked();
    const m = MultiTree.open(dir, { stores: NAMES });
    expect(m.version).toBe(6);
    for (let v = 1; v <= 6; v++) expect(toHex(m.appHashAt(v))).toBe(app[v]);
    m.close();
  });

  it("reopened after a crash between its stores' landings, brings the stores that landed back to where it began", () => {
    const { dir, app } = landedButUnmarked();
    // Only acc landed.
    for (const n of NAMES.slice(1)) expect(Tree.rollback(join(dir, "stores", n), 2)).toBe(4);
    const m = MultiTree.open(dir, { stores: NAMES });
    expect(m.version).toBe(2);
    for (const n of NAMES) expect(m.tree(n).versions(), n).toEqual([1, 2]);
    expect(toHex(m.appHash)).toBe(app[2]);
    change(m, 3);
    expect(toHex(m.commit().appHash)).toBe(app[3]);
    m.close();
  });

  it("after SIGKILL anywhere in groups, reopens at a version that landed, with its hashes, plain or multi", async () => {
    const child = fileURLToPath(new URL("./fixtures/group-writer.ts", import.meta.url));
    const STORES = ["bank", "lockup", "staking"];
    for (const kind of ["multi", "plain"] as const) {
      const dir = tempDir();
      const names = kind === "multi" ? STORES : ["plain"];
      const models = names.map(() => Tree.memory());
      const hashes: string[][] = names.map(() => [toHex(EMPTY_HASH)]);
      const extend = (v: number): void => {
        while (models[0]!.version < v) {
          const next = models[0]!.version + 1;
          models.forEach((t, i) => {
            applyVersion(t, kind === "multi" ? next * 10 + i : next * 10, 150);
            hashes[i]!.push(toHex(t.commit().hash));
          });
        }
      };
      // Each child is killed once it printed the n-th version it landed (none: as soon as it opened), so that the kill
      // lands in a later group, however fast the machine: in its commits or in its landing.
      for (const landed of [0, 2, 5, 1, 7, 3]) {
        const p = node(kind === "multi" ? [child, dir] : [child, dir, "plain"]);
        const opened = Number((await p.line(/^opened (\d+)$/))[1]);
        if (landed > 0) await p.line(new RegExp(`^committed ${opened + landed}$`));
        p.p.kill("SIGKILL");
        const { signal } = await p.exited;
        if (signal !== "SIGKILL") throw new Error(p.stderr);
        const last = Math.max(opened, ...p.numbers(/^committed (\d+)$/));
        const trees = kind === "multi" ? MultiTree.open(dir, { stores: STORES }) : undefined;
        const plain = trees === undefined ? Tree.open(dir) : undefined;
        const version = trees?.version ?? plain!.version;
        // Nothing printed is lost, and what is there is whole.
        expect(version).toBeGreaterThanOrEqual(last);
        extend(version);
        names.forEach((name, i) => {
          const t = trees?.tree(name) ?? plain!;
          expect(t.version).toBe(version);
          expect(toHex(t.hash), `${kind} ${name} at ${version}`).toBe(hashes[i]![version]);
        });
        trees?.close();
        plain?.close();
      }
      expect(models[0]!.version).toBeGreaterThan(5);
    }
    // A safety net: every kill waits for a line the child printed, as slow as a busy machine makes it.
  }, 600_000);
});
