import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { EMPTY_HASH, toHex, Tree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { rng } from "./helpers.js";
import { applyVersion } from "./fixtures/version-ops.js";
import { node } from "./processes.js";

const child = fileURLToPath(new URL("./fixtures/crash-writer.ts", import.meta.url));

/**
 * Runs the writer on `dir` and kills it (SIGKILL) once it has printed `commits` commits after opening (none: as soon as
 * it has opened), so that the kill lands in the commit after, whatever the machine's speed. Returns the version it
 * opened at and the last version whose commit() it saw return (lines it printed before the kill landed included).
 */
async function runAndKill(dir: string, durability: string, commits: number): Promise<{ opened: number; last: number }> {
  const p = node([child, dir, durability]);
  const opened = Number((await p.line(/^opened (\d+)$/))[1]);
  if (commits > 0) await p.line(new RegExp(`^committed ${opened + commits}$`));
  p.p.kill("SIGKILL");
  const { signal } = await p.exited;
  if (signal !== "SIGKILL") throw new Error(`writer exited on its own: ${p.stderr}`);
  return { opened, last: Math.max(opened, ...p.numbers(/^committed (\d+)$/)) };
}

describe.each([
  // "normal" loses nothing that commit() returned; "async" at most the queued tail (asyncQueue: 4 in the child).
  // Each kill costs a child's start (a second or two of CPU for node and tsx): 16 of them span some 40 versions.
  { durability: "normal", kills: 16, mayLose: 0, maxCommits: 4 },
  // Up to 8 commits before the kill: some kills land with the queue still filling, some with it full.
  { durability: "async", kills: 8, mayLose: 4, maxCommits: 8 },
])("crash safety (SIGKILL, durability $durability)", ({ durability, kills, mayLose, maxCommits }) => {
  it("reopens after every kill with no torn version, no older than allowed, every version intact", async () => {
    const dir = tempDir();
    const model = Tree.memory();
    const hashes: string[] = [toHex(EMPTY_HASH)];
    const expectUpTo = (v: number): void => {
      while (model.version < v) {
        applyVersion(model, model.version + 1);
        hashes.push(toHex(model.commit().hash));
      }
    };
    const rand = rng(12345);
    // The version the last reopen found, and the least the kills guarantee: each commit a child saw return, less
    // what may be lost.
    let reopened = 0;
    let guaranteed = 0;
    for (let kill = 0; kill < kills; kill++) {
      // 0 kills the child in its first commit after opening; n, in the commit after its n-th.
      const commits = Math.floor(rand() * (maxCommits + 1));
      const { opened, last } = await runAndKill(dir, durability, commits);
      expect(opened, "the child opened where the last reopen found the store").toBe(reopened);
      const t = Tree.open(dir);
      expect(t.version).toBeGreaterThanOrEqual(Math.max(opened, last - mayLose));
      guaranteed = Math.max(guaranteed, opened + commits - mayLose);
      reopened = t.version;
      expectUpTo(t.version);
      expect(toHex(t.hash)).toBe(hashes[t.version]);
      // Every earlier version still reads: its hash, and a value that changed in it.
      for (let v = 1; v <= t.version; v += Math.max(1, Math.floor(t.version / 10))) {
        expect(toHex(t.at(v).hash)).toBe(hashes[v]);
      }
      t.close();
    }
    // The kills happened across many versions, not all at the start.
    expect(guaranteed).toBeGreaterThan(kills / 2);
    expect(model.version).toBeGreaterThanOrEqual(guaranteed);
    // Full check of reads at the end: every version's contents equal the model's.
    const t = Tree.open(dir);
    for (let v = 1; v <= t.version; v += 3) {
      const got = [...t.at(v).iterate()].map(([k, x]) => toHex(k) + toHex(x));
      const want = [...model.at(v).iterate()].map(([k, x]) => toHex(k) + toHex(x));
      expect(got).toEqual(want);
    }
    t.close();
    // A safety net: nothing here waits on the clock, and a busy machine only makes each child slower to start.
  }, 600_000);
});
