/**
 * What clients on other machines and origins need from `iavlite serve`, over real HTTP: CORS for browser pages of
 * allowed origins (preflights, the header on every answer, errors included, none for other origins, none at all by
 * default), 405 with `Allow` for a known path under another method (404 stays for unknown paths), and a JSON-RPC body
 * bound with room for a full batch of `abci_query` requests with keys at the limit, one byte past it a 413. CORS is
 * also checked where it is enforced, in a headless Chromium: a page of another origin makes cosmjs's request.
 */
import { createServer as createHttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MultiReader, MultiTree, toHex } from "../src/index.js";
import { createServer } from "../src/serve/server.js";
import { bodyLimitFor, MAX_BATCH, parseServeOptions, type ServeOptions } from "../src/serve/serve-options.js";
import { tempDir } from "./backends.js";
import { launchBrowser } from "./browser.js";
import { b, codeOf } from "./helpers.js";

const APP = "https://app.example";
const DEV = "http://localhost:5173";
const EVIL = "https://evil.example";

let dir: string;
const servers: FastifyInstance[] = [];
/** The base URLs of the servers: CORS for APP and DEV, for any origin, and off (the default). */
let listed: string;
let any: string;
let off: string;

async function listen(o: ServeOptions): Promise<string> {
  const app = await createServer(MultiReader.open(dir), { refreshMs: 0, ...o });
  servers.push(app);
  await app.listen({ host: "127.0.0.1", port: 0 });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  dir = tempDir("iavlite-remote-");
  const w = MultiTree.open(dir, { stores: ["bank"] });
  for (let v = 1; v <= 3; v++) {
    w.tree("bank").set(b(`k${v}`), b(`v${v}`));
    w.commit();
  }
  w.close();
  [listed, any, off] = await Promise.all([listen({ corsOrigins: [APP, DEV] }), listen({ corsOrigins: ["*"] }), listen({})]);
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

/** The CORS headers of an answer (and Vary), by lower-case name. */
function corsHeaders(r: Response): Record<string, string> {
  return Object.fromEntries([...r.headers].filter(([k]) => k.startsWith("access-control-") || k === "vary"));
}

const errorCode = async (r: Response): Promise<string> => ((await r.json()) as { error: { code: string } }).error.code;

/** A preflight as a browser sends it before a cross-origin request `method` with headers `headers`. */
const preflight = (url: string, origin: string, method: string, headers?: string): Promise<Response> =>
  fetch(url, {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": method, ...(headers === undefined ? {} : { "access-control-request-headers": headers }) },
  });

/** A JSON-RPC request as cosmjs's HttpClient sends it: POST, the body JSON, `Content-Type: application/json`. */
const cosmjsPost = (url: string, body: unknown, origin?: string): Promise<Response> =>
  fetch(`${url}/`, {
    method: "POST",
    body: JSON.stringify(body),
    headers: { "Content-Type": "application/json", ...(origin === undefined ? {} : { origin }) },
  });

describe("CORS", () => {
  it("answers a preflight from an allowed origin: its origin, the methods and headers allowed, for how long", async () => {
    for (const [url, method, origin] of [[`${listed}/`, "POST", APP], [`${listed}/v1/query?store=bank&key=00`, "GET", DEV], [`${listed}/abci_query`, "GET", APP]] as const) {
      const r = await preflight(url, origin, method, "content-type");
      expect(r.status).toBe(204);
      expect(corsHeaders(r)).toEqual({
        "access-control-allow-origin": origin,
        "access-control-allow-methods": "GET, POST, OPTIONS",
        "access-control-allow-headers": "content-type, authorization",
        "access-control-max-age": "7200",
        vary: "Origin",
      });
      expect(await r.text()).toBe("");
    }
    expect((await preflight(`${listed}/`, APP, "POST")).headers.get("allow")).toBe("GET, HEAD, POST, OPTIONS");
  });

  it("gives a preflight from another origin no CORS header, so the browser refuses the request", async () => {
    for (const origin of [EVIL, "null", `${APP}:8443`, "http://app.example"]) {
      const r = await preflight(`${listed}/`, origin, "POST", "content-type");
      expect(r.status).toBe(204);
      expect(corsHeaders(r)).toEqual({ vary: "Origin" });
    }
  });

  it("puts the allowed origin on every answer to it, errors included, and on no answer to another origin", async () => {
    const answers = {
      status: (o: string) => fetch(`${listed}/v1/status`, { headers: { origin: o } }),
      query: (o: string) => fetch(`${listed}/v1/query?store=bank&key=${toHex(b("k1"))}&prove=true`, { headers: { origin: o } }),
      changes: (o: string) => fetch(`${listed}/v1/changes?store=bank&from=1&to=3`, { headers: { origin: o } }),
      rpc: (o: string) => cosmjsPost(listed, { jsonrpc: "2.0", id: 1, method: "abci_query", params: { path: "/store/bank/key", data: toHex(b("k2")) } }, o),
      uri: (o: string) => fetch(`${listed}/abci_query?path="/store/bank/key"&data=0x${toHex(b("k2"))}`, { headers: { origin: o } }),
      badKey: (o: string) => fetch(`${listed}/v1/query?store=bank&key=zz`, { headers: { origin: o } }),
      noStore: (o: string) => fetch(`${listed}/v1/query?store=nope&key=00`, { headers: { origin: o } }),
      badJson: (o: string) => fetch(`${listed}/`, { method: "POST", body: "{not json", headers: { "content-type": "application/json", origin: o } }),
      noRoute: (o: string) => fetch(`${listed}/v1/nope`, { headers: { origin: o } }),
      badUrl: (o: string) => fetch(`${listed}/v1/%zz`, { headers: { origin: o } }),
      wrongMethod: (o: string) => fetch(`${listed}/v1/status`, { method: "DELETE", headers: { origin: o } }),
    };
    const statuses: Record<string, number> = {};
    for (const [name, send] of Object.entries(answers)) {
      const mine = await send(APP);
      statuses[name] = mine.status;
      await mine.arrayBuffer();
      expect([name, corsHeaders(mine)]).toEqual([name, { "access-control-allow-origin": APP, vary: "Origin" }]);
      const theirs = await send(EVIL);
      await theirs.arrayBuffer();
      expect([name, corsHeaders(theirs)]).toEqual([name, { vary: "Origin" }]);
    }
    expect(statuses).toEqual({ status: 200, query: 200, changes: 200, rpc: 200, uri: 200, badKey: 400, noStore: 404, badJson: 400, noRoute: 404, badUrl: 400, wrongMethod: 405 });
    // Without an Origin (not a browser's cross-origin request): no CORS header, but the answer still varies by it.
    const plain = await fetch(`${listed}/v1/status`);
    expect(corsHeaders(plain)).toEqual({ vary: "Origin" });
  });

  it('with "*", answers any origin with *, and no Vary', async () => {
    const r = await preflight(`${any}/`, EVIL, "POST", "content-type");
    expect([r.status, r.headers.get("access-control-allow-origin"), r.headers.get("access-control-allow-methods"), r.headers.get("vary")]).toEqual([204, "*", "GET, POST, OPTIONS", null]);
    const rpc = await cosmjsPost(any, { jsonrpc: "2.0", id: 1, method: "health" }, EVIL);
    expect([rpc.status, corsHeaders(rpc)]).toEqual([200, { "access-control-allow-origin": "*" }]);
    const err = await fetch(`${any}/v1/query?store=bank&key=zz`, { headers: { origin: APP } });
    expect([err.status, corsHeaders(err)]).toEqual([400, { "access-control-allow-origin": "*" }]);
  });

  it("is off by default: no CORS header on any answer, a preflight only says Allow", async () => {
    const r = await preflight(`${off}/`, APP, "POST", "content-type");
    expect([r.status, r.headers.get("allow"), corsHeaders(r)]).toEqual([204, "GET, HEAD, POST, OPTIONS", {}]);
    for (const url of [`${off}/v1/status`, `${off}/v1/query?store=bank&key=zz`, `${off}/nope`]) {
      const a = await fetch(url, { headers: { origin: APP } });
      await a.arrayBuffer();
      expect(corsHeaders(a)).toEqual({});
    }
  });

  it("lets a page of an allowed origin in a real browser make cosmjs's JSON-RPC request, and no other page", async () => {
    // The page's own origin: another port than the service's, so every request below is cross-origin.
    const pages = createHttpServer((_req, res) => res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>app</title>"));
    await new Promise<void>((r) => pages.listen(0, "127.0.0.1", r));
    const origin = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;
    const mine = await listen({ corsOrigins: [origin] });
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage();
      await page.goto(`${origin}/`);
      // As @cosmjs/tendermint-rpc's http() sends it: POST, JSON body, Content-Type application/json (so a preflight).
      const call = (url: string): Promise<unknown> =>
        page.evaluate(async (u) => {
          const body = { jsonrpc: "2.0", id: 1, method: "abci_query", params: { path: "/store/bank/key", data: "6b32", prove: true } };
          try {
            const r = await fetch(u, { method: "POST", body: JSON.stringify(body), headers: { "Content-Type": "application/json" } });
            const json = (await r.json()) as { result: { response: { code: number; value: string; proofOps: { ops: unknown[] } } } };
            return [r.status, json.result.response.code, json.result.response.value, json.result.response.proofOps.ops.length];
          } catch (e) {
            return String(e);
          }
        }, url);
      expect(await call(`${mine}/`)).toEqual([200, 0, Buffer.from("v2").toString("base64"), 2]);
      // An error answer is readable too.
      expect(await page.evaluate(async (u) => (await fetch(u)).status, `${mine}/v1/query?store=bank&key=zz`)).toBe(400);
      // The service of another list, and one without CORS: the browser keeps the answer from the page.
      expect(await call(`${listed}/`)).toMatch(/TypeError: Failed to fetch/);
      expect(await call(`${off}/`)).toMatch(/TypeError: Failed to fetch/);
    } finally {
      await browser.close();
      pages.close();
    }
  }, 60_000);

  it("takes only origins as browsers send them", () => {
    expect(parseServeOptions({ corsOrigins: [APP, DEV, "http://[::1]:3000", "chrome-extension://abcdef", "*"] }).corsOrigins).toHaveLength(5);
    expect(parseServeOptions(undefined).corsOrigins).toEqual([]);
    for (const bad of [`${APP}/`, "https://App.example", "https://app.example:443", "null", "app.example", "", "https://u@app.example"]) {
      expect([bad, codeOf(() => parseServeOptions({ corsOrigins: [bad] }))]).toEqual([bad, "INVALID_OPTIONS"]);
    }
  });
});

describe("methods", () => {
  it("answers a known path under another method 405 METHOD_NOT_ALLOWED with Allow; an unknown path stays 404", async () => {
    const cases: Array<[string, string, string]> = [
      ["POST", "/v1/query?store=bank&key=00", "GET, HEAD, OPTIONS"],
      ["PUT", "/", "GET, HEAD, POST, OPTIONS"],
      ["POST", "/abci_query", "GET, HEAD, OPTIONS"],
      ["POST", "/status", "GET, HEAD, OPTIONS"],
      ["DELETE", "/metrics", "GET, HEAD, OPTIONS"],
      ["POST", "/explorer/explorer.js", "GET, HEAD, OPTIONS"],
    ];
    for (const [method, path, allow] of cases) {
      // A body, as a client would send one: the 405 comes before it is read, whatever it holds.
      const r = await fetch(`${off}${path}`, { method, body: method === "DELETE" ? null : "{not json", headers: { "content-type": "application/json" } });
      expect([method, path, r.status, r.headers.get("allow")]).toEqual([method, path, 405, allow]);
      expect(await r.json()).toEqual({ error: { code: "METHOD_NOT_ALLOWED", message: `${method} is not allowed on ${path.split("?")[0]}; it takes ${allow}` } });
    }
    for (const [method, path] of [["POST", "/v1/nope"], ["GET", "/v1/query/"], ["OPTIONS", "/v1/nope"], ["POST", "/explorer/verify/a/b"], ["DELETE", "/V1/status"]]) {
      const r = await fetch(`${off}${path}`, { method: method! });
      expect([method, path, r.status, r.headers.get("allow"), await errorCode(r)]).toEqual([method, path, 404, null, "NOT_FOUND"]);
    }
    // A route's own methods are untouched: HEAD of a GET route, and GET / (the explorer page).
    expect((await fetch(`${off}/v1/status`, { method: "HEAD" })).status).toBe(200);
    expect((await fetch(`${off}/`)).headers.get("content-type")).toMatch(/^text\/html/);
  });
});

describe("the JSON-RPC body bound", () => {
  const KEY = 65_536;
  const LIMIT = bodyLimitFor(KEY);
  /** A full batch of abci_query requests, each for a different key of KEY bytes, as cosmjs writes them. */
  const batch = Array.from({ length: MAX_BATCH }, (_, i) => ({
    jsonrpc: "2.0",
    id: 100_000_000_000 + i,
    method: "abci_query",
    params: { path: "/store/bank/key", data: Buffer.alloc(KEY, i + 1).toString("hex"), height: "3", prove: true },
  }));
  const json = JSON.stringify(batch);

  /** POSTs `text` to the CORS-enabled server from APP, as cosmjs would (JSON, no chunking). */
  const post = (text: string): Promise<Response> => fetch(`${listed}/`, { method: "POST", body: text, headers: { "content-type": "application/json", origin: APP } });

  it("is 100 × (2 × maxKeyBytes + 1 KiB): 13,209,600 bytes at the default 64 KiB, as documented", () => {
    expect(LIMIT).toBe(13_209_600);
    expect(parseServeOptions(undefined).maxKeyBytes).toBe(KEY);
    expect(MAX_BATCH).toBe(100);
  });

  it("has room for a full batch of abci_query with keys at the limit, up to the last byte of the bound", async () => {
    expect(json.length).toBeLessThan(LIMIT);
    for (const text of [json, json + " ".repeat(LIMIT - json.length)]) {
      const r = await post(text);
      expect(r.status).toBe(200);
      const answers = (await r.json()) as Array<{ id: number; result: { response: { code: number; key: string; value: null; proofOps: { ops: unknown[] } } } }>;
      expect(answers.map((a) => a.id)).toEqual(batch.map((q) => q.id));
      for (const [i, a] of answers.entries()) {
        expect([a.result.response.code, a.result.response.value, a.result.response.proofOps.ops.length]).toEqual([0, null, 2]);
        expect(a.result.response.key).toBe(Buffer.alloc(KEY, i + 1).toString("base64"));
      }
    }
  }, 60_000);

  it("answers one byte more 413 BODY_TOO_LARGE, saying the bound and what it is for", async () => {
    const r = await post(json + " ".repeat(LIMIT - json.length + 1));
    expect(r.status).toBe(413);
    expect(r.headers.get("access-control-allow-origin")).toBe(APP);
    expect(await r.json()).toEqual({
      error: {
        code: "BODY_TOO_LARGE",
        message: "the body is over 13209600 bytes, the most this service reads: room for a JSON-RPC batch of 100 abci_query requests with keys of 65536 bytes",
      },
    });
  }, 60_000);
});
