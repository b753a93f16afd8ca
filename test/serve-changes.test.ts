/**
 * `GET /v1/changes` over real HTTP: the NDJSON stream equals the library's `changes(from, to)` line for line
 * (removals as null), every error a client can cause has its status before the stream starts (a span too large, to
 * before from, a version never committed, pruned or imported), the stream is pulled as the client reads (a client
 * that stops reading stops the reads), a failure mid-stream cuts the body after an error line, a stream past the
 * request timeout is cut, and the route is counted in /metrics.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IavlError, MultiReader, MultiTree, toHex, Tree, type VersionChange } from "../src/index.js";
import { createServer } from "../src/serve/server.js";
import { MAX_CHANGES_SPAN, type ServeOptions } from "../src/serve/serve-options.js";
import { tempDir } from "./backends.js";
import { b } from "./helpers.js";
import { applyVersion } from "./fixtures/version-ops.js";

const STORES = ["bank", "staking"];
const VERSIONS = 24;
const PRUNED_TO = 6;

type Line = { version: number; key: string; value: string | null };
type ErrorJson = { error: { code: string; message: string } };

let dir: string;
const servers: FastifyInstance[] = [];
const readers: MultiReader[] = [];

/** A live server on a real socket over `d` (and the reader it reads through). */
async function serve(d: string, o: ServeOptions = {}): Promise<{ url: string; reader: MultiReader }> {
  const reader = MultiReader.open(d);
  const app = await createServer(reader, { refreshMs: 0, ...o });
  servers.push(app);
  await app.listen({ host: "127.0.0.1", port: 0 });
  return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, reader };
}

/**
 * Resolves with `count()` once it has stayed the same for 50 turns of the event loop in a row: the server runs in
 * this process, and a route that can still write moves on within a turn or two, while one that waits for a paused
 * client's socket to drain makes none, however busy the machine.
 */
async function stalled(count: () => number): Promise<number> {
  for (let same = 0, last = count(); same < 50; ) {
    await new Promise((r) => setImmediate(r));
    const now = count();
    same = now === last ? same + 1 : 0;
    last = now;
  }
  return count();
}

/** The library's answer, as the route writes it. */
function expected(r: MultiReader, store: string, from: number, to: number): Line[] {
  return [...r.store(store).changes(from, to)].map((c: VersionChange) => ({
    version: c.version,
    key: toHex(c.key),
    value: c.value === null ? null : toHex(c.value),
  }));
}

async function changes(url: string): Promise<{ status: number; type: string | null; text: string }> {
  const r = await fetch(url);
  return { status: r.status, type: r.headers.get("content-type"), text: await r.text() };
}

const lines = (text: string): Line[] => text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Line);

let url: string;
let lib: MultiReader;

beforeAll(async () => {
  dir = tempDir("iavlite-changes-");
  const w = MultiTree.open(dir, { stores: STORES, checkpointInterval: 4 });
  for (let v = 1; v <= VERSIONS; v++) {
    // Few keys, so that removals find keys that exist.
    STORES.forEach((s, i) => applyVersion(w.tree(s), v * 10 + i, 40, 120));
    w.commit();
  }
  await w.prune(PRUNED_TO);
  w.close();
  ({ url } = await serve(dir));
  lib = MultiReader.open(dir);
  readers.push(lib);
});

afterAll(async () => {
  for (const s of servers) await s.close();
  for (const r of readers) r.close();
});

describe("GET /v1/changes", () => {
  it("streams NDJSON equal to the library's changes(), removals as null", async () => {
    let removals = 0;
    for (const store of STORES) {
      const { status, type, text } = await changes(`${url}/v1/changes?store=${store}&from=${PRUNED_TO + 1}&to=${VERSIONS}`);
      expect(status).toBe(200);
      expect(type).toBe("application/x-ndjson");
      expect(text.endsWith("\n")).toBe(true);
      const got = lines(text);
      expect(got).toEqual(expected(lib, store, PRUNED_TO + 1, VERSIONS));
      // Every version of the span, in order, each in key order.
      expect([...new Set(got.map((l) => l.version))]).toEqual(Array.from({ length: VERSIONS - PRUNED_TO }, (_, i) => PRUNED_TO + 1 + i));
      removals += got.filter((l) => l.value === null).length;
      // Exactly these three fields (the CLI's --json --hex adds keyEncoding/valueEncoding; here bytes are always hex).
      expect(Object.keys(JSON.parse(text.slice(0, text.indexOf("\n"))) as object)).toEqual(["version", "key", "value"]);
    }
    expect(removals).toBeGreaterThan(10);
    // One version alone is the same slice.
    const one = lines((await changes(`${url}/v1/changes?store=bank&from=15&to=15`)).text);
    expect(one).toEqual(expected(lib, "bank", 15, 15));
    expect(one.length).toBeGreaterThan(5);
  });

  it("answers client errors before streaming: 400 for the span or bad versions, 404 never committed or unknown store, 410 pruned", async () => {
    const err = async (q: string): Promise<[number, string, string]> => {
      const r = await fetch(`${url}/v1/changes?${q}`);
      const body = (await r.json()) as ErrorJson;
      return [r.status, body.error.code, body.error.message];
    };
    expect((await err("store=bank&from=9&to=8")).slice(0, 2)).toEqual([400, "INVALID_ARGUMENT"]);
    const tooLong = await err(`store=bank&from=7&to=${7 + MAX_CHANGES_SPAN}`);
    expect(tooLong.slice(0, 2)).toEqual([400, "INVALID_ARGUMENT"]);
    expect(tooLong[2]).toContain(`more than the ${MAX_CHANGES_SPAN}`);
    expect(tooLong[2]).toContain(`from=7&to=${6 + MAX_CHANGES_SPAN}`);
    for (const q of ["store=bank&from=0&to=3", "store=bank&from=x&to=3", "store=bank&from=3", "store=bank&to=3", "from=7&to=8"]) {
      expect((await err(q)).slice(0, 2), q).toEqual([400, "INVALID_ARGUMENT"]);
    }
    expect((await err(`store=bank&from=20&to=${VERSIONS + 1}`)).slice(0, 2)).toEqual([404, "VERSION_NOT_FOUND"]);
    expect((await err("store=nope&from=7&to=8")).slice(0, 2)).toEqual([404, "STORE_NOT_FOUND"]);
    // A span that begins in the pruned versions, and one pruned version alone.
    expect((await err(`store=bank&from=${PRUNED_TO - 1}&to=${PRUNED_TO + 3}`)).slice(0, 2)).toEqual([410, "VERSION_PRUNED"]);
    expect((await err("store=staking&from=1&to=1")).slice(0, 2)).toEqual([410, "VERSION_PRUNED"]);
    // The whole span is checked before the first line: a pruned version inside a span of kept ones (a snapshot kept
    // by keepEvery before it) is a 410 too, not a cut stream.
    const snapDir = join(tempDir(), "snap");
    const t = Tree.open(snapDir, { keepEvery: 5, checkpointInterval: 5 });
    for (let v = 1; v <= 20; v++) {
      applyVersion(t, v, 20, 60);
      t.commit();
    }
    await t.prune(12, { keepEvery: 5 });
    t.close();
    const snap = await serve(snapDir);
    expect(snap.reader.store("snap").versions().slice(0, 3)).toEqual([5, 10, 13]);
    const r = await fetch(`${snap.url}/v1/changes?from=10&to=14`);
    expect([r.status, ((await r.json()) as ErrorJson).error.code]).toEqual([410, "VERSION_PRUNED"]);
    expect((await changes(`${snap.url}/v1/changes?from=13&to=20`)).status).toBe(200);
  });

  it("refuses an imported version, whose changes the store never logged, with 410", async () => {
    const mem = Tree.memory();
    for (let v = 1; v <= 3; v++) {
      applyVersion(mem, v, 30, 80);
      mem.commit();
    }
    const importDir = join(tempDir(), "copy");
    const t = await Tree.import(importDir, mem.at(3).export(), { version: 3, expectedHash: mem.at(3).hash });
    t.set(b("after"), b("import"));
    t.commit();
    t.close();
    const s = await serve(importDir);
    const r = await fetch(`${s.url}/v1/changes?from=3&to=4`);
    expect([r.status, ((await r.json()) as ErrorJson).error.code]).toEqual([410, "VERSION_PRUNED"]);
    expect(lines((await changes(`${s.url}/v1/changes?from=4&to=4`)).text)).toEqual([
      { version: 4, key: toHex(b("after")), value: toHex(b("import")) },
    ]);
  });

  it("reads only as fast as the client takes the stream", async () => {
    const bigDir = join(tempDir(), "big");
    const t = Tree.open(bigDir);
    const value = new Uint8Array(16_384).fill(0xab);
    const VERS = 300;
    for (let v = 1; v <= VERS; v++) {
      for (let k = 0; k < 4; k++) t.set(b(`key-${v}-${k}`), value);
      t.commit();
    }
    t.close();
    const s = await serve(bigDir);
    // Count the changes the route pulls from the store.
    const store = s.reader.store("big");
    const real = store.changes.bind(store);
    let pulled = 0;
    store.changes = function* (from: number, to: number): Generator<VersionChange> {
      for (const c of real(from, to)) {
        pulled++;
        yield c;
      }
    };
    const total = VERS * 4; // ~39 MB of NDJSON
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      http.get(`${s.url}/v1/changes?from=1&to=${VERS}`, (r) => {
        r.pause();
        resolve(r);
      }).on("error", reject);
    });
    expect(res.statusCode).toBe(200);
    // Once the route stalls on the paused socket, only what the buffers hold was read: far from the whole answer.
    const whilePaused = await stalled(() => pulled);
    expect(whilePaused).toBeGreaterThan(0);
    expect(whilePaused).toBeLessThan(total / 2);
    expect(await stalled(() => pulled)).toBe(whilePaused);
    let count = 0;
    let rest = "";
    await new Promise<void>((resolve, reject) => {
      res.setEncoding("utf8");
      res.on("data", (d: string) => {
        const parts = (rest + d).split("\n");
        rest = parts.pop()!;
        for (const p of parts) {
          const l = JSON.parse(p) as Line;
          if (l.value !== toHex(value)) reject(new Error(`line ${count}: wrong value`));
          count++;
        }
      });
      res.on("end", resolve);
      res.on("error", reject);
      res.resume();
    });
    expect([count, rest, pulled]).toEqual([total, "", total]);
  });

  it("cuts the body after an error line when the store fails mid-stream", async () => {
    const s = await serve(dir);
    const store = s.reader.store("bank");
    const real = store.changes.bind(store);
    store.changes = function* (from: number, to: number): Generator<VersionChange> {
      for (const c of real(from, to)) {
        if (c.version === 20) throw new IavlError("VERSION_PRUNED", "version 20 was pruned while it was read");
        yield c;
      }
    };
    // Enough lines before the failure that the first chunk went out with status 200.
    const before = expected(lib, "bank", 7, 19);
    expect(before.reduce((n, l) => n + JSON.stringify(l).length + 1, 0)).toBeGreaterThan(2 * 16_384);
    const { status, complete, text } = await new Promise<{ status: number | undefined; complete: boolean; text: string }>((resolve) => {
      http.get(`${s.url}/v1/changes?store=bank&from=7&to=24`, (r) => {
        let text = "";
        r.setEncoding("utf8");
        r.on("data", (d: string) => (text += d));
        r.on("error", () => undefined);
        r.on("close", () => resolve({ status: r.statusCode, complete: r.complete, text }));
      });
    });
    expect(status).toBe(200);
    expect(complete).toBe(false);
    const got = text.split("\n").filter((l) => l !== "");
    expect(JSON.parse(got.at(-1)!)).toEqual({ error: { code: "VERSION_PRUNED", message: "version 20 was pruned while it was read" } });
    expect(got.slice(0, -1).map((l) => JSON.parse(l) as Line)).toEqual(before);
    // Not a finished answer in the metrics, but one cut short.
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    expect(metrics).toContain('iavlite_http_responses_unfinished_total{route="/v1/changes"} 1');
    expect(metrics).not.toContain('iavlite_http_requests_total{route="/v1/changes"');
  });

  it("cuts a stream not done within the request timeout", async () => {
    const slowDir = join(tempDir(), "slow");
    const t = Tree.open(slowDir);
    const value = new Uint8Array(16_384).fill(0xcd);
    for (let v = 1; v <= 60; v++) {
      for (let k = 0; k < 4; k++) t.set(b(`key-${v}-${k}`), value);
      t.commit();
    }
    t.close();
    const s = await serve(slowDir, { requestTimeoutMs: 300 });
    // A client that stops reading past the timeout gets an incomplete body, not a whole-looking one: it reads on once
    // the service has counted the answer as cut short.
    const cut = async (): Promise<void> => {
      const unfinished = /^iavlite_http_responses_unfinished_total\{route="\/v1\/changes"\} [1-9]/m;
      while (!unfinished.test(await (await fetch(`${s.url}/metrics`)).text())) await new Promise((r) => setTimeout(r, 20));
    };
    const { status, complete, lines } = await new Promise<{ status: number | undefined; complete: boolean; lines: number }>((resolve, reject) => {
      http.get(`${s.url}/v1/changes?from=1&to=60`, (r) => {
        r.pause();
        let lines = 0;
        cut().then(() => {
          r.on("data", (d: Buffer) => {
            for (let at = d.indexOf(10); at !== -1; at = d.indexOf(10, at + 1)) lines++;
          });
          r.on("error", () => undefined);
          r.on("close", () => resolve({ status: r.statusCode, complete: r.complete, lines }));
          r.resume();
        }, reject);
      });
    });
    expect(status).toBe(200);
    expect(complete).toBe(false);
    expect(lines).toBeLessThan(240);
  });

  it("is counted and timed in /metrics like the other routes", async () => {
    const text = await (await fetch(`${url}/metrics`)).text();
    expect(text).toMatch(/iavlite_http_requests_total\{route="\/v1\/changes",method="GET",status="200"\} [1-9]/);
    expect(text).toMatch(/iavlite_http_requests_total\{route="\/v1\/changes",method="GET",status="410"\} [1-9]/);
    expect(text).toMatch(/iavlite_http_request_duration_seconds_count\{route="\/v1\/changes"\} [1-9]/);
  });
});
