/**
 * What clients on other machines need from `iavlite serve`, over real HTTP: 405 with `Allow` for a known path under
 * another method (404 stays for unknown paths), and a JSON-RPC body bound with room for a full batch of `abci_query`
 * requests with keys at the limit, one byte past it a 413.
 */
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MultiReader, MultiTree } from "../src/index.js";
import { createServer } from "../src/serve/server.js";
import { bodyLimitFor, MAX_BATCH, parseServeOptions } from "../src/serve/serve-options.js";
import { tempDir } from "./backends.js";
import { b } from "./helpers.js";

let app: FastifyInstance;
let url: string;

beforeAll(async () => {
  const dir = tempDir("iavlite-remote-");
  const w = MultiTree.open(dir, { stores: ["bank"] });
  for (let v = 1; v <= 3; v++) {
    w.tree("bank").set(b(`k${v}`), b(`v${v}`));
    w.commit();
  }
  w.close();
  app = await createServer(MultiReader.open(dir), { refreshMs: 0 });
  await app.listen({ host: "127.0.0.1", port: 0 });
  url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});

afterAll(async () => app.close());

const errorCode = async (r: Response): Promise<string> => ((await r.json()) as { error: { code: string } }).error.code;

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
      const r = await fetch(`${url}${path}`, { method, body: method === "DELETE" ? null : "{not json", headers: { "content-type": "application/json" } });
      expect([method, path, r.status, r.headers.get("allow")]).toEqual([method, path, 405, allow]);
      expect(await r.json()).toEqual({ error: { code: "METHOD_NOT_ALLOWED", message: `${method} is not allowed on ${path.split("?")[0]}; it takes ${allow}` } });
    }
    for (const [method, path] of [["POST", "/v1/nope"], ["GET", "/v1/query/"], ["OPTIONS", "/v1/nope"], ["POST", "/explorer/verify/a/b"], ["DELETE", "/V1/status"]]) {
      const r = await fetch(`${url}${path}`, { method: method! });
      expect([method, path, r.status, r.headers.get("allow"), await errorCode(r)]).toEqual([method, path, 404, null, "NOT_FOUND"]);
    }
    // A route's own methods are untouched: HEAD of a GET route, and GET / (the explorer page).
    expect((await fetch(`${url}/v1/status`, { method: "HEAD" })).status).toBe(200);
    expect((await fetch(`${url}/`)).headers.get("content-type")).toMatch(/^text\/html/);
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

  /** POSTs `text` as cosmjs would (JSON, no chunking). */
  const post = (text: string): Promise<Response> => fetch(`${url}/`, { method: "POST", body: text, headers: { "content-type": "application/json" } });

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
    expect(await r.json()).toEqual({
      error: {
        code: "BODY_TOO_LARGE",
        message: "the body is over 13209600 bytes, the most this service reads: room for a JSON-RPC batch of 100 abci_query requests with keys of 65536 bytes",
      },
    });
  }, 60_000);
});
