/**
 * A script that opens a store and never calls close() must exit by itself once its work is done: the threads the
 * library keeps (prune, WAL checkpointer, async writer) hold the process open only while a caller waits on them, a
 * prune runs or a committed version is still in flight. Each case runs a real child process (fixtures/no-close.ts) and waits for
 * its exit, however long it takes (the test's timeout is the only bound), then reopens what it left.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { MultiTree, toHex, Tree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { applyVersion } from "./fixtures/version-ops.js";
import { spawn } from "node:child_process";
import { node, Proc, root } from "./processes.js";

const child = fileURLToPath(new URL("./fixtures/no-close.ts", import.meta.url));

/**
 * Runs the child in `mode` on a fresh folder until it exits by itself; returns the folder and what it printed. The
 * child runs the package built for the tests, or with `fromSource` the sources through tsx, as `npm start` does.
 */
async function runToExit(mode: string, fromSource = false): Promise<{ dir: string; lines: string[] }> {
  const dir = tempDir();
  const p = fromSource ? new Proc(spawn(process.execPath, ["--import", "tsx", child, dir, mode], { cwd: root, env: { ...process.env, IAVLITE_BUILT: "" } })) : node([child, dir, mode]);
  const { code, signal } = await p.exited;
  expect({ code, signal, stderr: p.stderr }).toEqual({ code: 0, signal: null, stderr: "" });
  return { dir, lines: p.lines };
}

/** The hash of `version` when the operations of versions 1..version are applied (fixtures/version-ops.ts). */
function modelHash(version: number): string {
  const m = Tree.memory();
  for (let v = 1; v <= version; v++) {
    applyVersion(m, v);
    m.commit();
  }
  return toHex(m.hash);
}

/** The store a "keep" script left: versions 56–60 of 60 (keepRecent 5), the last with the model's hash. */
function expectKeptFrom56(dir: string): void {
  const t = Tree.open(dir);
  expect(t.version).toBe(60);
  expect(t.versions()).toEqual([56, 57, 58, 59, 60]);
  expect(toHex(t.hash)).toBe(modelHash(60));
  t.close();
}

describe("a script that never closes its store exits by itself", () => {
  it("after an awaited prune", async () => {
    const { dir, lines } = await runToExit("prune");
    expect(lines).toEqual(["pruned 20 at 30"]);
    const t = Tree.open(dir);
    expect(t.version).toBe(30);
    expect(t.versions()[0]).toBe(21);
    expect(toHex(t.hash)).toBe(modelHash(30));
    t.close();
  }, 120_000);

  it("after automatic prunes (keepRecent)", async () => {
    const { dir, lines } = await runToExit("keep");
    expect(lines).toEqual(["committed 60, kept from 56"]);
    expectKeptFrom56(dir);
  }, 120_000);

  it("from the sources too, printing nothing on stderr (node warned as the prune thread's entry loaded)", async () => {
    const { dir, lines } = await runToExit("keep", true);
    expect(lines).toEqual(["committed 60, kept from 56"]);
    expectKeptFrom56(dir);
  }, 120_000);

  it("while automatic prunes run, once they are done, with the newest target reached", async () => {
    const { dir, lines } = await runToExit("keep-ending");
    expect(lines).toEqual(["committed 60"]);
    // A running prune holds the process open until no work is left: the last target asked (60 - 5) was reached.
    expectKeptFrom56(dir);
  }, 120_000);

  it("after a MultiTree's awaited prune", async () => {
    const { dir, lines } = await runToExit("multi");
    expect(lines).toEqual(["pruned 20,20 at 30"]);
    const app = MultiTree.open(dir, { stores: ["bank", "staking"] });
    expect(app.version).toBe(30);
    expect(app.tree("bank").versions()[0]).toBe(21);
    expect(app.tree("staking").versions()[0]).toBe(21);
    app.close();
  }, 120_000);

  it("after async commits and an awaited flush()", async () => {
    const { dir, lines } = await runToExit("async");
    expect(lines).toEqual(["flushed 30"]);
    const t = Tree.open(dir);
    expect(t.version).toBe(30);
    expect(toHex(t.hash)).toBe(modelHash(30));
    t.close();
  }, 120_000);

  it("after async commits with neither flush() nor close(), with every committed version on disk", async () => {
    const { dir, lines } = await runToExit("async-unflushed");
    expect(lines).toEqual(["committed 30"]);
    const t = Tree.open(dir);
    // commit() returned for version 30: it is stored, as it would be with durability normal.
    expect(t.version).toBe(30);
    t.close();
  }, 120_000);

  it("only once a prune nobody awaits has settled", async () => {
    const { dir, lines } = await runToExit("pending");
    // The process lived until the prune's answer came, and the prune is whole on disk.
    expect(lines).toEqual(["pruned 100 at 120"]);
    const t = Tree.open(dir);
    expect(t.version).toBe(120);
    expect(t.versions()[0]).toBe(101);
    expect(toHex(t.hash)).toBe(modelHash(120));
    t.close();
  }, 120_000);
});
