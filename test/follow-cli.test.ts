/**
 * `iavlite follow` as a real process, where it meets what goes wrong: a URL that is none exits 2 at once; a source
 * that stops is asked again less and less often, with one note when it goes and one when it comes back; a source
 * rolled back that committed another history is refused as soon as it answers, naming the last version both share
 * and the commands that follow it from there, which then do.
 */
import { readdirSync, statSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MultiTree, toHex } from "../src/index.js";
import { tempDir } from "./backends.js";
import { b } from "./helpers.js";
import { limitFiles, main, node, nodeOnDisk, serve, type Proc } from "./processes.js";

const STORES = ["bank", "staking"];
const VERSION = /^version (\d+)$/;

/** Commits versions up to `to` to `w`, each changing a key of every store (values carry `salt`). */
function commitTo(w: MultiTree, to: number, salt: string): void {
  while (w.version < to) {
    const v = w.version + 1;
    for (const s of STORES) w.tree(s).set(b(`${s}-${v % 5}`), b(`${salt}-${s}-${v}`));
    w.commit();
  }
}

/** The latest version of the multi-store in `dir`, and its app hash. */
function stateOf(dir: string): [number, string] {
  const r = MultiTree.openReadOnly(dir);
  try {
    return [r.latest, toHex(r.appHashAt(r.latest)!)];
  } finally {
    r.close();
  }
}

/** `iavlite follow url dir` with short waits. */
const follower = (url: string, dir: string): Proc => node([main, "follow", url, dir, "--wait-ms", "200", "--retry-ms", "50", "--max-retry-ms", "400"]);

describe("iavlite follow, when things go wrong", () => {
  it("exits 2 at once, with one line, for a URL that is not one", async () => {
    for (const url of ["notaurl", "ftp://x", "http://"]) {
      const dir = `${tempDir()}/replica`;
      const p = node([main, "follow", url, dir]);
      expect(await p.exited).toEqual({ code: 2, signal: null });
      expect(p.stderr.trim().split("\n")).toEqual([`iavlite: <url>: ${JSON.stringify(url)} is not the http:// or https:// URL of an \`iavlite serve\` (e.g. http://10.0.0.5:26680)`]);
    }
  });

  it("waits out a stopped source with pauses that double up to the cap, one note when it goes and one when it is back", async () => {
    const src = tempDir();
    const w = MultiTree.open(src, { stores: STORES });
    commitTo(w, 3, "a");
    let source = await serve(src);
    const port = Number(new URL(source.url).port);
    const replica = `${tempDir()}/replica`;
    const f = follower(source.url, replica);
    try {
      // It starts from the snapshot of version 3, then follows.
      await f.errLine(/snapshot of version 3$/);
      commitTo(w, 4, "a");
      await f.line(/^version 4$/);
      source.proc.p.kill("SIGKILL");
      await source.proc.exited;
      await f.errLine(/^iavlite: source unreachable: /);
      // While the source is away, its port answers nothing: each try is a connection, closed at once.
      const tries: number[] = [];
      let counted: () => void = () => undefined;
      const closer = createServer((s: Socket) => {
        tries.push(performance.now());
        s.destroy();
        counted();
      });
      await new Promise<void>((r) => closer.listen(port, "127.0.0.1", r));
      await new Promise<void>((r) => (counted = () => tries.length >= 6 && r()));
      await new Promise<void>((r) => closer.close(() => r()));
      commitTo(w, 5, "a");
      source = await serve(src, "--port", String(port));
      await f.errLine(/^iavlite: source back$/);
      await f.line(/^version 5$/);
      const notes = f.stderr.split("\n").filter((l) => /source (unreachable|back)/.test(l));
      expect(notes.map((l) => l.replace(/unreachable: .*/, "unreachable: …"))).toEqual(["iavlite: source unreachable: …", "iavlite: source back"]);
      // The pauses double from 50 ms up to the cap of 400 (the tries counted began after some), never a try every 50 ms.
      const gaps = tries.slice(1).map((t, i) => t - tries[i]!);
      gaps.forEach((g, i) => expect(g, `pause ${i} of ${gaps.map((x) => x.toFixed(0)).join(", ")}`).toBeGreaterThanOrEqual(Math.min(50 * 2 ** i, 400) - 5));
      expect(gaps[gaps.length - 1]).toBeGreaterThanOrEqual(395);
      f.p.kill("SIGTERM");
      expect(await f.exited).toEqual({ code: 0, signal: null });
      expect(stateOf(replica)).toEqual(stateOf(src));
    } finally {
      w.close();
    }
  }, 180_000);

  it("stops on a full disk saying which version the replica holds, and follows on from it when run again", async () => {
    const src = tempDir();
    const w = MultiTree.open(src, { stores: STORES });
    commitTo(w, 3, "a");
    const source = await serve(src);
    const replica = `${tempDir()}/replica`;
    const args = [main, "follow", source.url, replica, "--wait-ms", "200"];
    const f = nodeOnDisk(args);
    try {
      await f.errLine(/snapshot of version 3$/);
      commitTo(w, 4, "a");
      await f.line(/^version 4$/);
      // No file of the replica may grow any more; the source commits versions of 64 KiB values.
      const largest = Math.max(...readdirSync(replica, { recursive: true, encoding: "utf8" }).map((p) => statSync(join(replica, p)).size));
      limitFiles(f.p.pid!, largest);
      for (let v = 5; v <= 12; v++) {
        for (const s of STORES) w.tree(s).set(b(`${s}-big-${v}`), new Uint8Array(65_536).fill(v));
        w.commit();
      }
      expect((await f.exited).code).toBe(1);
      const said = f.stderr.split("\n").find((l) => /^iavlite: (DISK_FULL|IO_ERROR): /.test(l));
      expect(said ?? f.stderr).toMatch(/; the replica holds version (\d+): follow again once the disk has room$/);
      const held = Number(/holds version (\d+)/.exec(said!)![1]);
      expect(stateOf(replica)[0]).toBe(held);
      // Run again, with room: it goes on from there to the source's last version.
      const again = node(args);
      await again.line(/^version 12$/);
      again.p.kill("SIGTERM");
      expect(await again.exited).toEqual({ code: 0, signal: null });
      expect(stateOf(replica)).toEqual(stateOf(src));
      expect(again.numbers(VERSION)[0]).toBe(held + 1);
    } finally {
      w.close();
    }
  }, 180_000);

  it("refuses a source rolled back to another history as soon as it answers, leaves the replica as it was, and the commands it names follow the source", async () => {
    const src = tempDir();
    let w = MultiTree.open(src, { stores: STORES });
    commitTo(w, 5, "a");
    let source = await serve(src);
    const port = new URL(source.url).port;
    const replica = `${tempDir()}/replica`;
    let f = follower(source.url, replica);
    try {
      await f.errLine(/snapshot of version 5$/);
      commitTo(w, 10, "a");
      await f.line(/^version 10$/);
      const before = stateOf(replica);
      // The source goes down, is rolled back to 6 and commits another 7 and 8: the replica, at 10, is ahead of it.
      source.proc.p.kill("SIGKILL");
      await source.proc.exited;
      w.close();
      MultiTree.rollback(src, 6);
      w = MultiTree.open(src, { stores: STORES });
      commitTo(w, 8, "b");
      source = await serve(src, "--port", port);
      expect(await f.exited).toEqual({ code: 1, signal: null });
      const refusal = f.stderr.split("\n").find((l) => l.startsWith("iavlite: CORRUPT: "));
      expect(refusal).toMatch(
        new RegExp(
          `^iavlite: CORRUPT: the source's history is not this replica's: at version 8 the source's app hash is [0-9a-f]{64} and this replica's is [0-9a-f]{64}; ` +
            `the last version both hold with the same app hash is 6, and the replica was left as it is\\. ` +
            `To follow this source from there: iavlite rollback ${replica} --to 6 --yes, then iavlite follow ${source.url} ${replica}$`,
        ),
      );
      expect(stateOf(replica)).toEqual(before);
      // The commands it names, as it names them.
      const [, rollback, again] = /from there: iavlite (rollback .*), then iavlite (follow .*)$/.exec(refusal!)!;
      const r = node([main, ...rollback!.split(" ")]);
      expect((await r.exited).code, r.stderr).toBe(0);
      f = node([main, ...again!.split(" "), "--wait-ms", "200"]);
      await f.line(/^version 8$/);
      commitTo(w, 9, "b");
      await f.line(/^version 9$/);
      f.p.kill("SIGTERM");
      expect(await f.exited).toEqual({ code: 0, signal: null });
      expect(stateOf(replica)).toEqual(stateOf(src));
      expect(f.numbers(VERSION)).toEqual([7, 8, 9]);
    } finally {
      w.close();
    }
  }, 180_000);
});
