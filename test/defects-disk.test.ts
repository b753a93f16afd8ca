/**
 * A full disk, made with a file-size limit set on a running child (`prlimit`, soft limit only, so that it can be lifted
 * again; node ignores SIGXFSZ): every write past the limit fails as a write to a full disk does. In every durability of
 * a Tree and a MultiTree, and in a prune, a rollback, an import and the creation of a store, the failure is a coded
 * IavlError that says what was stored, the same handle goes on once space is back, and a reopen holds every version
 * commit() returned with its hash: none lost, none resurrected.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { iavlSpec, verifyMembership } from "@confio/ics23";
import { describe, expect, it } from "vitest";
import { MultiTree, toHex, Tree, type ErrorCode } from "../src/index.js";
import { tempDir } from "./backends.js";
import { b, branchRowsProblem, leafRowsProblem } from "./helpers.js";
import { limitFiles, nodeOnDisk } from "./processes.js";

const life = fileURLToPath(new URL("./fixtures/disk-full-life.ts", import.meta.url));

/** What a write the disk refused is: a file-size limit gives IO_ERROR (EFBIG), a full file system DISK_FULL. */
const DISK_CODES: ErrorCode[] = ["IO_ERROR", "DISK_FULL"];

interface Failure {
  code: string;
  message: string;
}
type Event = Record<string, unknown> & { event: string };

/**
 * Runs test/fixtures/disk-full-life.ts in `mode` on `dir`: sets the file-size limit it asks for once it is ready,
 * lifts it once the disk was full, and returns the three events it printed.
 */
async function underFullDisk(mode: string, dir: string): Promise<{ full: Event; done: Event }> {
  const proc = nodeOnDisk([life, mode, dir]);
  const pid = proc.p.pid!;
  const event = async (name: string): Promise<Event> => JSON.parse((await proc.line(new RegExp(`^\\{"event":"${name}"`))).input!) as Event;
  const ready = await event("ready");
  limitFiles(pid, ready["limit"] as number);
  proc.p.stdin!.write("go\n");
  const full = await event("full");
  limitFiles(pid, "unlimited");
  proc.p.stdin!.write("space\n");
  const done = await event("done");
  const { code } = await proc.exited;
  expect(code, proc.stderr).toBe(0);
  return { full, done };
}

/** Checks `f` is a disk failure whose message matches `says`. */
function expectDiskFailure(f: unknown, says: RegExp): void {
  expect(f, "the operation must fail while the disk is full").toBeDefined();
  const { code, message } = f as Failure;
  expect(code, message).toBeOneOf(DISK_CODES);
  expect(message).toMatch(says);
}

/** Checks `committed` is versions 1…n in order and returns n. */
function contiguous(committed: Array<[number, string]>): number {
  expect(committed.map(([v]) => v)).toEqual(committed.map((_, i) => i + 1));
  return committed.length;
}

describe("a full disk, then space again", () => {
  for (const durability of ["normal", "full", "async"] as const) {
    it(`a Tree (durability ${durability}): commit() fails with the version unstored and its changes pending; once space is back the same handle commits them; a reopen holds every version it returned`, async () => {
      const dir = join(tempDir(), "store");
      const { full, done } = await underFullDisk(`tree:${durability}`, dir);
      const committed = done["committed"] as Array<[number, string]>;
      const n = contiguous(committed);
      expectDiskFailure(full["failure"], /version \d+/);
      // With durability normal the commit journal's append fails first (nothing stored, the changes pending), unless
      // it fitted and the store's file did not: the writer thread then failed as with async.
      const landing = durability === "async" || (durability === "normal" && /not stored yet/.test((full["failure"] as Failure).message));
      if (landing) {
        // The version that failed was returned already; the next commit() told of it. The flush retries it: on a full
        // disk it fails the same way, unless the retry needs no new space (the WAL checkpointer thread may have started
        // the WAL over meanwhile), when it lands them. Either way every version returned is kept, as checked below.
        expect((full["failure"] as Failure).message).toMatch(/not stored yet, and the next commit\(\) or flush\(\) lands them/);
        if (full["flushed"] !== undefined) expectDiskFailure(full["flushed"], /the background writer failed at version \d+/);
      } else {
        expect((full["failure"] as Failure).message).toMatch(/nothing of it was stored/);
        expect(full["pending"], "the failed version's changes stay pending").toBe(true);
      }
      expect(done["version"]).toBe(n);
      expect(done["hash"]).toBe(committed[n - 1]![1]);

      const t = Tree.open(dir);
      expect(t.versions()).toEqual(committed.map(([v]) => v));
      for (const [v, hash] of committed) expect(toHex(t.at(v).hash), `version ${v}`).toBe(hash);
      const key = b(`key-${n}-3`);
      const value = t.get(key)!;
      expect(value.length).toBe(4096);
      expect(verifyMembership(t.proof(key), iavlSpec, t.hash, key, value)).toBe(true);
      t.set(b("after"), b("the disk was full"));
      expect(t.commit().version).toBe(n + 1);
      t.close();
    }, 120_000);
  }

  for (const durability of ["normal", "full"] as const) {
    it(`a MultiTree (durability ${durability}): every store is back at the last version, the message says so, and the same handle goes on once space is back`, async () => {
      const dir = join(tempDir(), "multi");
      const { full, done } = await underFullDisk(`multi:${durability}`, dir);
      const committed = done["committed"] as Array<[number, string]>;
      const n = contiguous(committed);
      expectDiskFailure(full["failure"], /version \d+ was not committed: .*every store is at version \d+/);
      const at = committed.length - 3;
      expect([full["version"], ...(full["stores"] as number[])]).toEqual([at, at, at]);
      expect(full["pending"]).toBe(true);
      expect(done["hash"]).toBe(committed[n - 1]![1]);

      const m = MultiTree.open(dir, { stores: ["big", "acct"] });
      expect(m.version).toBe(n);
      for (const [v, hash] of committed) expect(toHex(m.appHashAt(v)), `version ${v}`).toBe(hash);
      m.tree("acct").set(b("after"), b("the disk was full"));
      expect(m.commit().version).toBe(n + 1);
      m.close();
    }, 120_000);
  }

  for (const kind of ["tree", "multi"] as const) {
    it(`creating a ${kind === "tree" ? "store" : "multi-store"} fails with a coded error naming the file, and succeeds in the same folder once space is back`, async () => {
      const dir = join(tempDir(), kind);
      const { full, done } = await underFullDisk(`fresh:${kind}`, dir);
      expectDiskFailure(full["failure"], /^opening .*\.sqlite: /);
      expect(contiguous(done["committed"] as Array<[number, string]>)).toBe(1);
    }, 60_000);
  }

  it("a prune says what it removed (nothing, or every version it was asked to), and the same prune run again finishes it and leaves no rows behind", async () => {
    const dir = join(tempDir(), "prune");
    const { full, done } = await underFullDisk("prune", dir);
    const committed = done["committed"] as Array<[number, string]>;
    expectDiskFailure(full["failure"], /^pruning failed: /);
    const message = (full["failure"] as Failure).message;
    const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);
    // The kept versions the handle reports agree with the message.
    if (/stopped part-way: 50 version\(s\) before 51 were removed/.test(message)) expect(full["versions"]).toEqual(range(51, 60));
    else {
      expect(message).toMatch(/nothing of it was stored/);
      expect(full["versions"]).toEqual(range(1, 60));
    }
    expect(done["versions"]).toEqual(range(51, 60));

    const t = Tree.open(dir);
    expect(t.versions()).toEqual(range(51, 60));
    for (const [v, hash] of committed.slice(50)) expect(toHex(t.at(v).hash), `version ${v}`).toBe(hash);
    t.close();
    expect(leafRowsProblem(dir)).toBeUndefined();
    expect(branchRowsProblem(dir)).toBeUndefined();
  }, 120_000);

  it("a rollback fails with nothing changed, and succeeds once space is back", async () => {
    const dir = join(tempDir(), "rollback");
    const { full, done } = await underFullDisk("rollback", dir);
    expectDiskFailure(full["failure"], /^(rolling back to version 10: .*nothing of it was stored|opening .*iavl\.sqlite: )/);
    expect(done["result"]).toBe(50);
    const committed = done["committed"] as Array<[number, string]>;
    const t = Tree.open(dir);
    expect(t.versions()).toEqual(committed.map(([v]) => v));
    for (const [v, hash] of committed) expect(toHex(t.at(v).hash), `version ${v}`).toBe(hash);
    t.close();
  }, 120_000);

  it("an import fails leaving its target folder importable, and the same import succeeds once space is back", async () => {
    const dir = join(tempDir(), "import");
    const { full, done } = await underFullDisk("import", dir);
    expectDiskFailure(full["failure"], /import/);
    const [[version, hash]] = done["committed"] as Array<[number, string]>;
    expect([done["version"], done["hash"]]).toEqual([version, hash]);
    const t = Tree.open(join(dir, "target"));
    expect([t.version, toHex(t.hash)]).toEqual([version, hash]);
    t.close();
  }, 120_000);
});
