/**
 * `close()` returns only once the store's own threads (the pruning worker, the async writer) have stopped writing:
 * right after it, another connection can take the write lock at once.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { setImmediate as tick } from "node:timers/promises";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { toHex, Tree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { b, rng, randomBytes } from "./helpers.js";

/** Tries `BEGIN IMMEDIATE; ROLLBACK` on the store file with no busy wait; returns the error code, or undefined. */
function tryWriteLock(db: Database.Database): string | undefined {
  try {
    db.exec("BEGIN IMMEDIATE; ROLLBACK");
    return undefined;
  } catch (e) {
    return (e as { code?: string }).code ?? String(e);
  }
}

/** The operations of version `v`: KEYS sets of 1–2 KB values over 3·KEYS keys, so old versions leave much to prune. */
const KEYS = 40;
function applyOps(t: Tree, v: number): void {
  const next = rng(v);
  for (let i = 0; i < KEYS; i++) t.set(b(`key-${(v * 7 + i) % (KEYS * 3)}`), randomBytes(next, 1024 + Math.floor(next() * 1024)));
}

describe("close() waits for the store's threads", () => {
  it("closing while a prune runs: nobody writes the store after close() returns, and the prune can run again", async () => {
    const dir = tempDir();
    const VERSIONS = 300;
    const PRUNE_TO = 250;
    const t = Tree.open(dir, { checkpointInterval: 10, shardSize: 20 });
    const model = Tree.memory();
    const hashes = [""];
    for (let v = 1; v <= VERSIONS; v++) {
      applyOps(t, v);
      applyOps(model, v);
      hashes.push(toHex(t.commit().hash));
      model.commit();
    }

    const p = t.prune(PRUNE_TO);
    let settled = false;
    p.catch(() => undefined).finally(() => (settled = true));
    t.close();

    // Probe the write lock, without waiting, until the prune's promise has settled (close() rejects it) and for at
    // least 300 ms: a window for a thread that would still write after close() (no correct one does, so a busy
    // machine can only make the window catch less).
    const probe = new Database(join(dir, "iavl.sqlite"), { timeout: 0 });
    const busy: string[] = [];
    const start = Date.now();
    let probes = 0;
    while (!settled || Date.now() - start < 300) {
      const code = tryWriteLock(probe);
      probes++;
      if (code !== undefined) {
        busy.push(`${code} after ${probes} probes`);
        break;
      }
      await tick();
    }
    probe.close();
    expect(busy, "another connection must get the write lock at once after close()").toEqual([]);

    // The store is whole and the prune runs to the end when asked again.
    const again = Tree.open(dir, { checkpointInterval: 10, shardSize: 20 });
    await again.prune(PRUNE_TO);
    expect(again.versions()).toEqual(Array.from({ length: VERSIONS - PRUNE_TO }, (_, i) => PRUNE_TO + 1 + i));
    for (let v = PRUNE_TO + 1; v <= VERSIONS; v++) expect(toHex(again.at(v).hash), `version ${v}`).toBe(hashes[v]);
    for (const v of [PRUNE_TO + 1, 275, VERSIONS]) {
      for (const i of [0, 17, 59, 119]) {
        const key = b(`key-${i}`);
        expect(again.at(v).get(key), `key-${i} at ${v}`).toEqual(model.at(v).get(key));
      }
    }
    again.close();
  }, 30_000);

  it("durability async: right after close() the write lock is free, and every committed version is there", () => {
    const dir = tempDir();
    const VERSIONS = 12;
    const t = Tree.open(dir, { durability: "async", checkpointInterval: 5 });
    const model = Tree.memory();
    const hashes = [""];
    // About 3 MB of WAL and no automatic checkpoint yet: whoever closes the store last has a checkpoint to do.
    for (let v = 1; v <= VERSIONS; v++) {
      applyOps(t, v);
      applyOps(model, v);
      hashes.push(toHex(t.commit().hash));
      model.commit();
    }
    t.close();
    // Every connection of the store is closed once close() returns: the last one to close removed the WAL file.
    const walLeft = existsSync(join(dir, "iavl.sqlite-wal"));
    // From the moment close() returns, and for the next 300 ms, the write lock is free every time it is tried.
    const probe = new Database(join(dir, "iavl.sqlite"), { timeout: 0 });
    const busy: string[] = [];
    const start = Date.now();
    for (let probes = 1; Date.now() - start < 300; probes++) {
      const code = tryWriteLock(probe);
      if (code !== undefined) {
        busy.push(`${code} after ${probes} probes`);
        break;
      }
    }
    probe.close();
    expect(busy, "another connection must get the write lock at once after close()").toEqual([]);
    expect(walLeft, "a connection of the store was still open after close() (the WAL file was still there)").toBe(false);

    const again = Tree.open(dir);
    expect(again.versions()).toEqual(Array.from({ length: VERSIONS }, (_, i) => i + 1));
    for (let v = 1; v <= VERSIONS; v++) expect(toHex(again.at(v).hash)).toBe(hashes[v]);
    again.close();
  }, 20_000);

  it("durability async with automatic pruning: right after close() nobody writes the store, and the kept versions are whole", async () => {
    const dir = tempDir();
    const VERSIONS = 40;
    const keepRecent = 10;
    const t = Tree.open(dir, { durability: "async", checkpointInterval: 5, shardSize: 10, keepRecent });
    const hashes = [""];
    for (let v = 1; v <= VERSIONS; v++) {
      applyOps(t, v);
      hashes.push(toHex(t.commit().hash));
    }
    t.close();
    // Probe the write lock, without waiting, for 1.5 s after close() returned: long enough for a prune worker that
    // was still starting to begin writing.
    const probe = new Database(join(dir, "iavl.sqlite"), { timeout: 0 });
    const busy: string[] = [];
    const start = Date.now();
    for (let probes = 1; Date.now() - start < 1500; probes++) {
      const code = tryWriteLock(probe);
      if (code !== undefined) {
        busy.push(`${code} after ${probes} probes, ${Date.now() - start} ms`);
        break;
      }
      await tick();
    }
    probe.close();
    expect(busy, "another connection must get the write lock at once after close()").toEqual([]);

    const again = Tree.open(dir);
    const kept = again.versions();
    expect(kept[kept.length - 1]).toBe(VERSIONS);
    expect(kept.length).toBeGreaterThanOrEqual(keepRecent);
    for (const v of kept) expect(toHex(again.at(v).hash), `version ${v}`).toBe(hashes[v]);
    again.close();
  }, 20_000);
});
