/**
 * `iavlite serve` as a real process with real HTTP: beside a writer process that commits and prunes, every answer
 * agrees with a model of the writer's operations, both proof levels verify with @confio/ics23, and the app hash is
 * the one `MultiTree.commit()` returned; on SIGTERM the requests in flight complete and it exits 0.
 */
import http from "node:http";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { commitInfoHash, toHex, Tree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { b, rng } from "./helpers.js";
import { main, node, serve } from "./processes.js";
import { proofsVerify, SERVE_STORES, serveModels, type QueryJson } from "./serve-check.js";

const writerScript = fileURLToPath(new URL("./fixtures/serve-writer.ts", import.meta.url));

async function getJson<T>(url: string): Promise<{ status: number; body: T }> {
  const r = await fetch(url);
  return { status: r.status, body: (await r.json()) as T };
}

describe("iavlite serve beside a writer process", () => {
  it("answers every query from one whole version, as the writer's model has it, with proofs that verify", async () => {
    const dir = tempDir("iavlite-serve-proc-");
    const COUNT = 80;
    const KEEP = 6;
    const writer = node([writerScript, dir, String(COUNT), String(KEEP), "40"]);
    await writer.line(/"v":1,/);
    // Two services on the same folder, beside the writer and each other.
    const [{ proc: server, url }, { proc: server2, url: url2 }] = await Promise.all([serve(dir, "--refresh-ms", "5"), serve(dir)]);
    const written = (): Map<number, string> =>
      new Map(writer.lines.filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as { v: number; app: string }).map((x) => [x.v, x.app]));

    const model = serveModels();
    const seenApp = new Map<number, string>();
    const stats = { queries: 0, proofs: 0, ranges: 0, pruned: 0, future: 0 };
    let lastLatest = 0;
    const url1 = url;
    const seenLatest = new Map<string, number>();
    let done = false;
    void writer.exited.then(() => (done = true));

    const worker = async (seed: number): Promise<void> => {
      const rand = rng(seed);
      const url = seed % 2 === 0 ? url2 : url1;
      let rounds = 0;
      // Until the writer is done and this service has shown its last version, and then on until enough answers were
      // checked, a pruned version among them (the writer prunes before it ends), however slow the machine was.
      while (!done || (seenLatest.get(url) ?? 0) < COUNT || rounds < 5 || stats.proofs <= 40 || stats.ranges <= 40 || stats.pruned === 0) {
        rounds++;
        const status = await getJson<{ latest: number; earliest: number; appHash: string; stores: Array<{ name: string; hash: string }> }>(`${url}/v1/status`);
        expect(status.status).toBe(200);
        const latest = status.body.latest;
        // Each service only moves forward (two services may be a refresh apart).
        expect(latest).toBeGreaterThanOrEqual(seenLatest.get(url) ?? 0);
        seenLatest.set(url, latest);
        lastLatest = Math.max(lastLatest, latest);
        seenApp.set(latest, status.body.appHash);
        expect(status.body.stores.map((s) => s.hash)).toEqual(SERVE_STORES.map((_, i) => toHex(model(i, latest).hash)));

        const v = Math.max(1, latest - Math.floor(rand() * (KEEP + 3)));
        const i = Math.floor(rand() * 3);
        const store = SERVE_STORES[i]!;
        const key = b(`k${Math.floor(rand() * 320)}`);
        const q = await getJson<QueryJson>(`${url}/v1/query?store=${store}&key=${toHex(key)}&height=${v}&prove=true`);
        stats.queries++;
        if (q.status === 410) {
          // Only versions the writer's keepRecent let go of.
          expect(v).toBeLessThanOrEqual(Math.max(...written().keys()) - KEEP + 1);
          stats.pruned++;
          continue;
        }
        expect(q.status).toBe(200);
        const want = model(i, v).get(key);
        expect([q.body.height, q.body.value]).toEqual([v, want === undefined ? null : toHex(want)]);
        expect(q.body.storeHash).toBe(toHex(model(i, v).hash));
        const app = toHex(commitInfoHash(new Map(SERVE_STORES.map((n, j) => [n, model(j, v).hash]))));
        expect(q.body.appHash).toBe(app);
        seenApp.set(v, q.body.appHash!);
        expect(proofsVerify(q.body, store)).toBe(true);
        stats.proofs++;

        const start = b(`k${Math.floor(rand() * 320)}`);
        const r = await getJson<{ height: number; pairs: Array<{ key: string; value: string }>; next: string | null }>(
          `${url}/v1/range?store=${store}&start=${toHex(start)}&height=${v}&limit=25`,
        );
        if (r.status === 410) {
          stats.pruned++;
          continue;
        }
        expect(r.status).toBe(200);
        const all = [...model(i, v).iterate({ start })];
        expect(r.body.pairs.map((p) => p.key + p.value)).toEqual(all.slice(0, 25).map(([k, x]) => toHex(k) + toHex(x)));
        expect(r.body.next).toBe(all.length > 25 ? toHex(all[25]![0]) : null);
        stats.ranges++;

        if (rand() < 0.2) {
          const f = await getJson<{ error: { code: string } }>(`${url}/v1/query?store=${store}&key=00&height=${COUNT + 100}`);
          expect([f.status, f.body.error.code]).toEqual([404, "VERSION_NOT_FOUND"]);
          stats.future++;
        }
      }
    };
    await Promise.all([1, 2, 3, 4].map(worker));
    expect((await writer.exited).code).toBe(0);

    // The app hashes served are those MultiTree.commit() returned.
    const committed = written();
    for (const [v, app] of seenApp) expect([v, app]).toEqual([v, committed.get(v)]);
    expect(lastLatest).toBe(COUNT);
    // Some reads chased versions the writer's keepRecent pruned meanwhile, and were answered 410, never wrongly.
    expect(stats.pruned).toBeGreaterThan(0);
    expect(stats.proofs).toBeGreaterThan(40);
    expect(stats.ranges).toBeGreaterThan(40);
    const pruned = await getJson<{ error: { code: string } }>(`${url}/v1/query?store=bank&key=00&height=1`);
    expect([pruned.status, pruned.body.error.code]).toEqual([410, "VERSION_PRUNED"]);

    for (const s of [server, server2]) {
      s.p.kill("SIGTERM");
      expect(await s.exited).toEqual({ code: 0, signal: null });
      expect(s.lines).toEqual([expect.stringMatching(/^listening on http:\/\/127\.0\.0\.1:\d+$/)]);
    }
    // A safety net: the workers wait for the writer and for answers, not for a clock.
  }, 240_000);
});

describe("iavlite serve on signals", () => {
  it("on SIGTERM stops accepting, finishes the answers in flight, and exits 0", async () => {
    const dir = join(tempDir("iavlite-serve-sig-"), "big");
    mkdirSync(dir);
    const t = Tree.open(dir);
    const value = new Uint8Array(8192).fill(7);
    for (let i = 0; i < 600; i++) t.set(b(`key-${String(i).padStart(4, "0")}`), value);
    t.commit();
    t.close();
    const { proc, url } = await serve(dir);

    // Four pages of ~8 MB each, read slowly: the server has answered (headers are here) but cannot finish writing.
    const agent = new http.Agent({ keepAlive: true });
    const inFlight = await Promise.all(
      [0, 1, 2, 3].map(
        (i) =>
          new Promise<http.IncomingMessage>((resolve, reject) => {
            http.get(`${url}/v1/range?limit=1000&start=${toHex(b(`key-000${i}`))}`, { agent }, (res) => {
              res.pause();
              resolve(res);
            }).on("error", reject);
          }),
      ),
    );
    expect(inFlight.map((r) => r.statusCode)).toEqual([200, 200, 200, 200]);
    proc.p.kill("SIGTERM");
    // Once it no longer accepts (a new connection is refused), it is still finishing the answers in flight.
    const refused = (): Promise<boolean> =>
      new Promise((resolve) => {
        http.get(`${url}/v1/status`, { agent: false }, (r) => (r.resume(), resolve(false))).on("error", () => resolve(true));
      });
    while (!(await refused())) await new Promise((r) => setTimeout(r, 20));
    expect(proc.p.exitCode).toBeNull();
    await expect(fetch(`${url}/v1/status`)).rejects.toThrow();

    const bodies = await Promise.all(
      inFlight.map(
        (res) =>
          new Promise<string>((resolve, reject) => {
            const chunks: Buffer[] = [];
            res.on("data", (c: Buffer) => chunks.push(c));
            res.on("end", () => resolve(Buffer.concat(chunks).toString()));
            res.on("error", reject);
            res.resume();
          }),
      ),
    );
    for (const text of bodies) {
      const page = JSON.parse(text) as { pairs: Array<{ key: string; value: string }>; next: string | null };
      expect(page.pairs.length).toBeGreaterThan(100);
      expect(page.pairs.every((p) => p.value === toHex(value))).toBe(true);
    }
    expect(await proc.exited).toEqual({ code: 0, signal: null });
    agent.destroy();

    // SIGINT too; and a folder that is not a store, or a bad port, fails at once.
    const again = await serve(dir);
    again.proc.p.kill("SIGINT");
    expect(await again.proc.exited).toEqual({ code: 0, signal: null });
    const notStore = node([main, "serve", tempDir(), "--port", "0"]);
    expect((await notStore.exited).code).toBe(1);
    expect(notStore.stderr).toMatch(/^iavlite: NOT_A_STORE: /);
    const badPort = node([main, "serve", dir, "--port", "70000"]);
    expect((await badPort.exited).code).toBe(2);
    const badOrigin = node([main, "serve", dir, "--port", "0", "--cors-origin", "https://app.example/"]);
    expect((await badOrigin.exited).code).toBe(2);
    expect(badOrigin.stderr).toContain('--cors-origin is not an origin');
  }, 120_000);

  it("serves only the stores named with --store, to the origins named with --cors-origin", async () => {
    const dir = tempDir("iavlite-serve-stores-");
    const writer = node([writerScript, dir, "3", "10", "0"]);
    expect((await writer.exited).code).toBe(0);
    const { proc, url } = await serve(dir, "--store", "staking", "--store", "bank", "--cors-origin", "https://app.example", "--cors-origin", "http://localhost:5173");
    for (const origin of ["https://app.example", "http://localhost:5173", "https://evil.example"]) {
      const r = await fetch(`${url}/v1/status`, { headers: { origin } });
      await r.arrayBuffer();
      expect([origin, r.headers.get("access-control-allow-origin")]).toEqual([origin, origin === "https://evil.example" ? null : origin]);
    }
    const status = await getJson<{ stores: Array<{ name: string }> }>(`${url}/v1/status`);
    expect(status.body.stores.map((s) => s.name)).toEqual(["bank", "staking"]);
    expect((await fetch(`${url}/v1/query?store=lockup&key=00`)).status).toBe(404);
    const q = await getJson<QueryJson>(`${url}/v1/query?store=staking&key=${toHex(b("k1"))}&prove=true`);
    expect(proofsVerify(q.body, "staking")).toBe(true);
    proc.p.kill("SIGTERM");
    expect((await proc.exited).code).toBe(0);
  }, 120_000);
});
