/**
 * `iavlite follow` as real processes: a writer commits and prunes, a service serves its folder, a replica follows
 * that service into a folder of its own, and a second service serves the replica. The replica and the source service
 * are killed (SIGKILL) and started again at random points; every answer the replica's service gives for a height is
 * the source's, byte for byte, with proofs that verify, and the replica ends at the writer's last app hash.
 */
import { writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { toHex } from "../src/index.js";
import { tempDir } from "./backends.js";
import { b, rng } from "./helpers.js";
import { main, node, serve, type Proc } from "./processes.js";
import { proofsVerify, SERVE_STORES, type QueryJson } from "./serve-check.js";

const writerScript = new URL("./fixtures/serve-writer.ts", import.meta.url).pathname;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The last version the writer printed. */
function lastVersion(writer: Proc): number {
  const vs = writer.lines.filter((l) => l.startsWith("{")).map((l) => (JSON.parse(l) as { v: number }).v);
  return Math.max(0, ...vs);
}

async function query(url: string, path: string): Promise<{ status: number; text: string }> {
  try {
    const r = await fetch(`${url}${path}`);
    return { status: r.status, text: await r.text() };
  } catch {
    return { status: 0, text: "" };
  }
}

const VERSION = /^version (\d+)$/;

/** Resolves once `p` (a replica) has printed `n` more versions than it has now. */
async function moreVersions(p: Proc, n: number): Promise<void> {
  const want = p.numbers(VERSION).length + n;
  while (p.numbers(VERSION).length < want) await p.line(VERSION, p.lines.length);
}

describe("iavlite follow beside a writer, its service and the replica's service", () => {
  it("answers as the source at every height, through kills of the replica and of the source's service", async () => {
    const COUNT = 150;
    const KEEP = 60;
    const src = tempDir("iavlite-follow-src-");
    const replica = `${tempDir("iavlite-follow-")}/replica`;
    // The writer goes on past COUNT until the test has seen all it needs while it wrote (a busy machine slows it).
    const enough = `${tempDir("iavlite-follow-enough-")}/enough`;
    const writer = node([writerScript, src, String(COUNT), String(KEEP), "100", enough]);
    await writer.line(/"v":3,/);
    let source = await serve(src);
    const port = new URL(source.url).port;
    const startFollower = (): Proc => node([main, "follow", source.url, replica, "--wait-ms", "300", "--retry-ms", "50"]);
    let follower = startFollower();
    await follower.line(VERSION);
    const mirror = await serve(replica, "--refresh-ms", "5");
    const rand = rng(7);
    let latest = 0;
    const stats = { same: 0, sameWhileWriting: 0, pruned: 0, followerKills: 0, sourceKills: 0, mirrorDown: 0, sourceDown: 0, restarted: 0 };
    // The versions each replica process committed, in its order.
    const runs: number[][] = [];
    const collect = (p: Proc): void => void runs.push(p.numbers(VERSION));

    let writing = true;
    void writer.exited.then(() => (writing = false));
    // Answers compared: each comparison wakes the one who waits for more.
    let compared: () => void = () => undefined;
    const moreCompared = (n: number): Promise<void> => {
      const want = stats.same + n;
      return new Promise((resolve) => (compared = () => stats.same >= want && resolve()));
    };
    // Four kills in a random order, each at a state: once answers were compared since the last kill and the replica
    // has committed a few more versions (from the source's service now up: so it follows that one).
    const chaos = (async () => {
      for (const victim of ["replica", "source", "replica", "source"].sort(() => rand() - 0.5)) {
        await moreCompared(2);
        await moreVersions(follower, 1 + Math.floor(rand() * 4));
        if (victim === "replica") {
          follower.p.kill("SIGKILL");
          await follower.exited;
          collect(follower);
          stats.followerKills++;
          follower = startFollower();
        } else {
          source.proc.p.kill("SIGKILL");
          await source.proc.exited;
          stats.sourceKills++;
          source = await serve(src, "--port", port);
        }
      }
      // Enough seen while the writer writes: it may stop once its COUNT versions are in.
      while (stats.sameWhileWriting <= 15) await moreCompared(1);
      while (runs.flat().length + follower.numbers(VERSION).length <= 20) await moreVersions(follower, 1);
      writeFileSync(enough, "");
    })();

    let chaosFailed: unknown;
    chaos.catch((e: unknown) => (chaosFailed = e));

    // Compares the two services at heights both hold, while all this goes on, and after it until the replica has
    // the writer's last version and 40 answers were compared.
    let last = Number.POSITIVE_INFINITY;
    while (writing || latest < last || stats.same < 40) {
      if (chaosFailed !== undefined) throw chaosFailed;
      if (!writing) last = lastVersion(writer);
      const status = await query(mirror.url, "/v1/status");
      if (status.status !== 200) {
        stats.mirrorDown++;
        await sleep(20);
        continue;
      }
      latest = (JSON.parse(status.text) as { latest: number }).latest;
      if (latest === 0) {
        await sleep(20);
        continue;
      }
      const height = Math.max(1, latest - Math.floor(rand() * 8));
      const store = SERVE_STORES[Math.floor(rand() * 3)]!;
      const path = `/v1/query?store=${store}&key=${toHex(b(`k${Math.floor(rand() * 320)}`))}&height=${height}&prove=true`;
      const [mine, theirs] = await Promise.all([query(mirror.url, path), query(source.url, path)]);
      if (theirs.status === 0) {
        stats.sourceDown++;
        await sleep(20);
        continue;
      }
      // A replica that started again from a snapshot (it fell behind the source's pruning) holds no height before it.
      if (mine.status === 404 && /began at version/.test(mine.text)) {
        stats.restarted++;
        await sleep(20);
        continue;
      }
      if (theirs.status === 410 || mine.status === 410) {
        stats.pruned++;
        await sleep(20);
        continue;
      }
      expect([mine.status, mine.text]).toEqual([theirs.status, theirs.text]);
      expect(proofsVerify(JSON.parse(mine.text) as QueryJson, store)).toBe(true);
      stats.same++;
      if (writing) stats.sameWhileWriting++;
      compared();
    }
    await chaos;
    expect((await writer.exited).code).toBe(0);
    collect(follower);

    // The last app hash is the writer's; every version after the replica's snapshot was committed, in order.
    const apps = new Map(writer.lines.filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as { v: number; app: string }).map((x) => [x.v, x.app]));
    const status = JSON.parse((await query(mirror.url, "/v1/status")).text) as { latest: number; appHash: string };
    expect([status.latest, status.appHash]).toEqual([last, apps.get(last)]);
    // Each process committed versions one after another, none twice; a version printed was durable (many land in
    // one transaction): the process after a kill went on past it.
    for (const r of runs) expect(r.every((v, i) => i === 0 || v > r[i - 1]!)).toBe(true);
    const printed = runs.filter((r) => r.length > 0);
    for (let i = 1; i < printed.length; i++) expect(printed[i]![0]).toBeGreaterThan(printed[i - 1]!.at(-1)!);
    expect(runs.flat().length).toBeGreaterThan(20);
    expect(stats.sameWhileWriting).toBeGreaterThan(15);
    expect([stats.followerKills, stats.sourceKills]).toEqual([2, 2]);
    console.log(`follow: ${stats.sameWhileWriting} while writing, ${stats.same} answers equal, ${stats.pruned} pruned, ${stats.restarted} before a new snapshot, ${stats.followerKills} replica kills, ${stats.sourceKills} source kills`);
    follower.p.kill("SIGTERM");
    expect(await follower.exited).toEqual({ code: 0, signal: null });
    // A safety net: every wait above is for a state (a line printed, answers compared, the writer's exit).
  }, 600_000);
});
