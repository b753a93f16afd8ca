import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { iavlSpec, verifyMembership } from "@confio/ics23";
import { describe, expect, it } from "vitest";
import { IavlError, toHex, Tree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { b, codeOf, rng, treehashOps, inStoreFile } from "./helpers.js";

describe("Tree.open", () => {
  it("reopens the treehash store with a tiny memory budget and keeps all four hashes", () => {
    const dir = tempDir();
    const vs = treehashOps();
    let t = Tree.open(dir, { checkpointInterval: 3 });
    for (const v of vs) {
      for (const op of v.ops) op[0] === "s" ? t.set(op[1], op[2]) : t.remove(op[1]);
      t.commit();
    }
    t.close();
    t = Tree.open(dir, { memoryBudgetMiB: 8 });
    expect(t.version).toBe(4);
    expect(toHex(t.hash)).toBe(vs[3]!.expectHash);
    expect(t.size).toBe(vs[3]!.sizeAfter);
    for (const v of vs) {
      const view = t.at(v.version);
      expect(toHex(view.hash)).toBe(v.expectHash);
      expect(view.size).toBe(v.sizeAfter);
      // A proof at a version between checkpoints needs a replay; it must still verify.
      const [k, val] = view.iterate().next().value as [Uint8Array, Uint8Array];
      expect(verifyMembership(view.proof(k), iavlSpec, view.hash, k, val)).toBe(true);
    }
    // Writes continue after a reopen with the same hashes a memory tree gives.
    const m = Tree.memory();
    for (const v of vs) {
      for (const op of v.ops) op[0] === "s" ? m.set(op[1], op[2]) : m.remove(op[1]);
      m.commit();
    }
    for (const tree of [t, m]) {
      tree.set(b("after-reopen"), b("x"));
      tree.remove(vs[0]!.ops[2]![1]);
    }
    expect(toHex(t.commit().hash)).toBe(toHex(m.commit().hash));
    t.close();
  });

  it("close and reopen after random versions gives identical hashes and reads", () => {
    const dir = tempDir();
    const rand = rng(7);
    const model = Tree.memory();
    const expected: Array<{ hash: string; entries: Array<[string, string]> }> = [];
    let t = Tree.open(dir, { checkpointInterval: 4, memoryBudgetMiB: 8 });
    for (let v = 1; v <= 30; v++) {
      const n = 1 + Math.floor(rand() * 60);
      for (let i = 0; i < n; i++) {
        const key = b(`k${Math.floor(rand() * 200)}`);
        const r = rand();
        // Set twice, set-remove and remove-absent all happen within one version here.
        if (r < 0.6) {
          const value = rand() < 0.1 ? new Uint8Array(0) : b(`v${v}.${i}`);
          t.set(key, value);
          model.set(key, value);
        } else {
          expect(t.remove(key)).toBe(model.remove(key));
        }
      }
      const c = t.commit();
      expect(toHex(c.hash)).toBe(toHex(model.commit().hash));
      expected.push({ hash: toHex(c.hash), entries: [...model.iterate()].map(([k, x]) => [toHex(k), toHex(x)]) });
      if (rand() < 0.3) {
        t.close();
        t = Tree.open(dir, { memoryBudgetMiB: 8, checkpointInterval: 4 });
        expect(t.version).toBe(v);
        expect(toHex(t.hash)).toBe(toHex(c.hash));
      }
    }
    t.close();
    t = Tree.open(dir);
    for (let v = 1; v <= 30; v++) {
      const view = t.at(v);
      expect(toHex(view.hash)).toBe(expected[v - 1]!.hash);
      expect([...view.iterate()].map(([k, x]) => [toHex(k), toHex(x)])).toEqual(expected[v - 1]!.entries);
      for (const [k, x] of expected[v - 1]!.entries.slice(0, 20)) expect(toHex(view.get(Buffer.from(k, "hex"))!)).toBe(x);
    }
    expect([...t.iterate()].length).toBe(model.size);
    t.close();
  });

  it("a clean close makes the last version a checkpoint, so that a reopen replays nothing", () => {
    const dir = tempDir();
    const checkpoints = (): number[] =>
      inStoreFile(dir, (db) => db.prepare("SELECT version FROM versions WHERE checkpoint = 1 ORDER BY version").pluck().all() as number[]);
    for (const durability of ["normal", "async"] as const) {
      const t = Tree.open(dir, { checkpointInterval: 100, durability });
      for (let i = 0; i < 7; i++) {
        for (let k = 0; k < 50; k++) t.set(b(`k${durability}${i}-${k}`), b(`v${i}`));
        t.remove(b(`k${durability}${i}-0`));
        t.commit();
      }
      const [version, hash] = [t.version, toHex(t.hash)];
      t.close();
      expect(checkpoints().at(-1)).toBe(version);
      const again = Tree.open(dir, { memoryBudgetMiB: 8 });
      expect([again.version, toHex(again.hash)]).toEqual([version, hash]);
      expect(again.get(b(`k${durability}6-7`))).toEqual(b("v6"));
      // Closing again with nothing committed writes nothing more.
      again.close();
    }
    expect(checkpoints()).toEqual([7, 14]);
  });

  it("replays exactly when a key is set twice, or created and removed, in one version", () => {
    const dir = tempDir();
    const ops = (tree: Tree): void => {
      for (let i = 0; i < 40; i++) tree.set(b(`base${i}`), b("v"));
      tree.commit();
      tree.set(b("A"), b("1"));
      tree.set(b("B"), b("2"));
      tree.set(b("A"), b("3"));
      tree.set(b("C"), b("4"));
      tree.remove(b("C"));
      for (let i = 0; i < 10; i++) tree.remove(b(`base${i}`));
      tree.set(b("base3"), b("again"));
      tree.commit();
    };
    const t = Tree.open(dir, { checkpointInterval: 1000 });
    const m = Tree.memory();
    ops(t);
    ops(m);
    t.close();
    const r = Tree.open(dir);
    expect(toHex(r.hash)).toBe(toHex(m.hash));
    expect(r.get(b("A"))).toEqual(b("3"));
    expect(r.has(b("C"))).toBe(false);
    expect(r.get(b("base3"))).toEqual(b("again"));
    r.close();
  });

  it("refuses a second writer, naming the holder, and lets one in after close", () => {
    const dir = tempDir();
    const t = Tree.open(dir);
    let err: unknown;
    try {
      Tree.open(dir);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(IavlError);
    expect((err as IavlError).code).toBe("LOCKED");
    expect((err as IavlError).message).toContain(`process ${process.pid}`);
    t.set(b("a"), b("1"));
    t.commit();
    t.close();
    const again = Tree.open(dir);
    expect(again.version).toBe(1);
    again.close();
  });

  it("refuses folders that are not stores, corrupt files and newer schemas without touching them", () => {
    const foreign = tempDir();
    writeFileSync(join(foreign, "notes.txt"), "hello");
    expect(codeOf(() => Tree.open(foreign))).toBe("NOT_A_STORE");

    const corrupt = tempDir();
    writeFileSync(join(corrupt, "iavl.sqlite"), "this is not a database, just text that is long enough to look like a header");
    expect(codeOf(() => Tree.open(corrupt))).toBe("CORRUPT");

    const other = tempDir();
    const db = new Database(join(other, "iavl.sqlite"));
    db.exec("CREATE TABLE things (x)");
    db.close();
    expect(codeOf(() => Tree.open(other))).toBe("NOT_A_STORE");

    const newer = tempDir();
    const t = Tree.open(newer);
    t.set(b("a"), b("1"));
    t.commit();
    t.close();
    const raw = new Database(join(newer, "iavl.sqlite"));
    raw.prepare("INSERT INTO schema_migrations (id, name, applied_at) VALUES (999, '999_future.sql', 'later')").run();
    raw.pragma("wal_checkpoint(TRUNCATE)");
    raw.close();
    const before = createHash("sha256").update(readFileSync(join(newer, "iavl.sqlite"))).digest("hex");
    expect(codeOf(() => Tree.open(newer))).toBe("SCHEMA_TOO_NEW");
    const after = createHash("sha256").update(readFileSync(join(newer, "iavl.sqlite"))).digest("hex");
    expect(after).toBe(before);
  });

  it("validates options, naming the field", () => {
    const dir = tempDir();
    for (const bad of [{ checkpointInterval: 0 }, { durability: "sometimes" }, { memoryBudgetMiB: -1 }, { nope: 1 }]) {
      let err: unknown;
      try {
        Tree.open(dir, bad as never);
      } catch (e) {
        err = e;
      }
      expect((err as IavlError).code).toBe("INVALID_OPTIONS");
      expect((err as IavlError).message).toContain(Object.keys(bad)[0]!);
    }
    // A refused open leaves the folder usable.
    const t = Tree.open(dir);
    expect(t.version).toBe(0);
    t.close();
  });

  it("answers VERSION_NOT_FOUND for versions never committed", () => {
    const t = Tree.open(tempDir(), { initialVersion: 10 });
    t.set(b("a"), b("1"));
    expect(t.commit().version).toBe(10);
    expect(codeOf(() => t.at(3))).toBe("VERSION_NOT_FOUND");
    expect(codeOf(() => t.at(11))).toBe("VERSION_NOT_FOUND");
    expect(t.at(10).get(b("a"))).toEqual(b("1"));
    t.close();
  });

  it.each(["normal", "async"] as const)(
    "keeps values exact while their memory is reused by later versions, and what get returned stays as it was (%s)",
    async (durability) => {
      const t = Tree.open(tempDir(), { durability, asyncQueue: 2, checkpointInterval: 3 });
      const m = Tree.memory();
      const next = rng(7);
      const held: Array<[Uint8Array, Uint8Array]> = []; // arrays get() returned, with copies of what they held then
      const hold = (a: Uint8Array | undefined): void => void (a !== undefined && held.push([a, a.slice()]));
      const keyOf = (): Uint8Array => b(`k${Math.floor(next() * 600)}`);
      const setVersion = (): void => {
        // ~2 MiB of values a version: the store's value chunks (1 MiB) are reused from the second version on.
        for (let i = 0; i < 400; i++) {
          const [key, value] = [keyOf(), new Uint8Array(1000 + Math.floor(next() * 9000)).fill(Math.floor(next() * 256))];
          value[0] = i;
          t.set(key, value);
          m.set(key, value);
          value.fill(0); // a caller reusing its buffer changes nothing that was set
        }
      };
      setVersion();
      for (let v = 1; v <= 30; v++) {
        hold(t.get(b(`k${v}`))); // a value still waiting for its commit
        expect(toHex(t.commit().hash)).toBe(toHex(m.commit().hash));
        setVersion();
        // With async, the version just committed may still be in flight while the next one's values are copied.
        for (let i = 0; i < 20; i++) {
          const key = keyOf();
          expect(toHex(t.get(key) ?? new Uint8Array())).toBe(toHex(m.get(key) ?? new Uint8Array()));
        }
      }
      await t.flush();
      for (const [a, then] of held) expect(toHex(a)).toBe(toHex(then));
      for (const version of [10, 30]) {
        for (const [k, value] of m.at(version).iterate()) expect(toHex(t.at(version).get(k)!)).toBe(toHex(value));
      }
      t.close();
    },
  );
});
