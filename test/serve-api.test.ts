/**
 * The query service's routes through fastify's inject() (no socket): every shape and status code of the v1 API and
 * of the CometBFT RPC, checked against a model of the store and with proofs verified by @confio/ics23.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromHex, MultiReader, MultiTree, toHex, Tree } from "../src/index.js";
import { createServer } from "../src/serve/server.js";
import type { ServeOptions } from "../src/serve/serve-options.js";
import { tempDir } from "./backends.js";
import { b } from "./helpers.js";
import { applyVersion } from "./fixtures/version-ops.js";
import { proofsVerify, verifyAbci, type ProofOp, type QueryJson } from "./serve-check.js";

const STORES = ["bank", "lockup", "staking"];
const VERSIONS = 12;
const PRUNED_TO = 4;

let dir: string;
let app: FastifyInstance;
const models = STORES.map(() => Tree.memory());
const appHashes: string[] = [""];

/** The operations of store `i` at version `v`, on the writer and on its model alike. */
function ops(t: Tree, i: number, v: number): void {
  applyVersion(t, v * 10 + i, 60, 300);
  if (i === 0 && v === 1) t.set(b("empty"), new Uint8Array(0));
}

beforeAll(async () => {
  dir = tempDir("iavlite-serve-");
  const w = MultiTree.open(dir, { stores: STORES, checkpointInterval: 4 });
  for (let v = 1; v <= VERSIONS; v++) {
    STORES.forEach((s, i) => {
      ops(w.tree(s), i, v);
      ops(models[i]!, i, v);
      models[i]!.commit();
    });
    appHashes.push(toHex(w.commit().appHash));
  }
  await w.prune(PRUNED_TO);
  w.close();
  app = await serverOn(dir);
});

afterAll(async () => app.close());

async function serverOn(d: string, o: ServeOptions = {}, stores?: string[]): Promise<FastifyInstance> {
  return createServer(MultiReader.open(d, stores === undefined ? {} : { stores }), { refreshMs: 0, ...o });
}

async function get<T>(url: string, on = app): Promise<{ status: number; body: T }> {
  const r = await on.inject({ method: "GET", url });
  return { status: r.statusCode, body: r.json<T>() };
}

const hexOf = (s: string): string => toHex(b(s));
const keyAt = (i: number): string => `k${i}`;

describe("GET /v1/status", () => {
  it("gives the versions every store holds, the app hash and each store's hash", async () => {
    const { status, body } = await get<{ latest: number; earliest: number; appHash: string; stores: Array<{ name: string; latest: number; earliest: number; hash: string }> }>("/v1/status");
    expect(status).toBe(200);
    expect(body).toEqual({
      latest: VERSIONS,
      earliest: PRUNED_TO + 1,
      appHash: appHashes[VERSIONS],
      stores: STORES.map((name, i) => ({ name, latest: VERSIONS, earliest: PRUNED_TO + 1, hash: toHex(models[i]!.at(VERSIONS).hash) })),
    });
  });
});

describe("GET /v1/query", () => {
  it("answers values at every kept height with both proof levels, as the model has them", async () => {
    let present = 0;
    for (let v = PRUNED_TO + 1; v <= VERSIONS; v++) {
      for (const [i, store] of STORES.entries()) {
        const model = models[i]!.at(v);
        for (const k of [keyAt(v * 7), keyAt(v * 13 + i), keyAt(299), "kabsent", "k150x"]) {
          const { status, body } = await get<QueryJson>(`/v1/query?store=${store}&key=${hexOf(k)}&height=${v}&prove=true`);
          expect(status).toBe(200);
          const want = model.get(b(k));
          expect(body.height).toBe(v);
          expect(body.key).toBe(hexOf(k));
          expect(body.value).toBe(want === undefined ? null : toHex(want));
          expect(body.storeHash).toBe(toHex(model.hash));
          expect(body.appHash).toBe(appHashes[v]);
          expect(proofsVerify(body, store)).toBe(true);
          if (want !== undefined) present++;
        }
      }
    }
    expect(present).toBeGreaterThan(20);
    // Without a height: the latest; without prove: no proofs.
    const { body } = await get<QueryJson>(`/v1/query?store=lockup&key=${hexOf(keyAt(5))}`);
    expect(body.height).toBe(VERSIONS);
    expect(body.proof).toEqual({ store: null, app: null });
    expect(body.value).toBe(toHex(models[1]!.get(b(keyAt(5)))!));
    // Upper-case hex and a 0x prefix are read too; answers are lower-case.
    const up = await get<QueryJson>(`/v1/query?store=lockup&key=0x${hexOf(keyAt(5)).toUpperCase()}`);
    expect(up.body.key).toBe(hexOf(keyAt(5)));
  });

  it("says EMPTY_VALUE_PROOF where ICS23 cannot prove an empty value, and still proves the store", async () => {
    const { status, body } = await get<QueryJson>(`/v1/query?store=bank&key=${hexOf("empty")}&prove=true`);
    expect(status).toBe(200);
    expect(body.value).toBe("");
    expect(body.proof.store).toBeNull();
    expect(body.proofError).toBe("EMPTY_VALUE_PROOF");
    expect(body.proof.app).not.toBeNull();
    // Nor a key whose non-existence needs the empty value as a neighbour ("absent" < "empty" < "k…").
    const absent = await get<QueryJson>(`/v1/query?store=bank&key=${hexOf("absent")}&prove=true`);
    expect([absent.body.value, absent.body.proof.store, absent.body.proofError]).toEqual([null, null, "EMPTY_VALUE_PROOF"]);
  });
});

describe("GET /v1/range", () => {
  type Page = { height: number; pairs: Array<{ key: string; value: string }>; next: string | null };
  const all = (i: number, v: number, start?: string, end?: string): string[] =>
    [...models[i]!.at(v).iterate({ start: start === undefined ? undefined : b(start), end: end === undefined ? undefined : b(end) })].map(([k, x]) => `${toHex(k)}=${toHex(x)}`);

  async function pages(url: string, reverse: boolean, on = app): Promise<{ pairs: string[]; count: number }> {
    const pairs: string[] = [];
    let next: string | null = null;
    let count = 0;
    do {
      const bound: string = next === null ? "" : reverse ? `&end=${next}` : `&start=${next}`;
      const { status, body }: { status: number; body: Page } = await get<Page>(`${url}${bound}`, on);
      expect(status).toBe(200);
      pairs.push(...body.pairs.map((p) => `${p.key}=${p.value}`));
      next = body.next;
      count++;
    } while (next !== null && count < 1000);
    return { pairs, count };
  }

  it("pages through a version forward and backward, with bounds, as the model iterates", async () => {
    const v = VERSIONS - 2;
    const forward = await pages(`/v1/range?store=staking&height=${v}&limit=7`, false);
    expect(forward.pairs).toEqual(all(2, v));
    expect(forward.count).toBe(Math.ceil(all(2, v).length / 7));
    const backward = await pages(`/v1/range?store=staking&height=${v}&limit=9&reverse=true`, true);
    expect(backward.pairs).toEqual(all(2, v).reverse());
    // Bounds: start inclusive, end exclusive (the end given with a reverse page bounds the first page only).
    const [s, e] = [keyAt(120), keyAt(200)];
    const bounded = await get<Page>(`/v1/range?store=staking&height=${v}&start=${hexOf(s)}&end=${hexOf(e)}&limit=1000`);
    expect(bounded.body.pairs.map((p) => `${p.key}=${p.value}`)).toEqual(all(2, v, s, e));
    expect(bounded.body.next).toBeNull();
    // Default limit 100, latest version.
    const first = await get<Page>("/v1/range?store=bank");
    expect(first.body.height).toBe(VERSIONS);
    expect(first.body.pairs.length).toBe(100);
    expect(first.body.next).toBe(all(0, VERSIONS)[100]!.split("=")[0]);
  });

  it("ends a page early at its byte budget, and paging still covers everything", async () => {
    const small = await serverOn(dir, { rangeBytes: 2_000 });
    try {
      const { body } = await get<Page>("/v1/range?store=lockup&limit=1000", small);
      expect(body.pairs.length).toBeGreaterThan(0);
      expect(body.pairs.length).toBeLessThan(100);
      const walked = await pages("/v1/range?store=lockup&limit=1000", false, small);
      expect(walked.pairs).toEqual(all(1, VERSIONS));
      expect(walked.count).toBeGreaterThan(5);
    } finally {
      await small.close();
    }
  });
});

describe("GET /v1/history", () => {
  type Page = { key: string; from: number; to: number; entries: Array<{ version: number; value: string | null }>; next: number | null };

  it("pages over real HTTP through the versions where a key changed, as the model has them, each entry proven at its version", async () => {
    const server = await serverOn(dir);
    const base = await server.listen({ port: 0, host: "127.0.0.1" });
    try {
      const fetchJson = async <T>(path: string): Promise<{ status: number; body: T }> => {
        const r = await fetch(`${base}${path}`);
        return { status: r.status, body: (await r.json()) as T };
      };
      // The key of the lockup store that changed most often in the kept versions.
      const keys = [...new Set([...models[1]!.at(PRUNED_TO + 1).iterate(), ...models[1]!.at(VERSIONS).iterate()].map(([k]) => toHex(k)))];
      const count = (k: string): number => models[1]!.history(fromHex(k), { limit: 1000 }).entries.length;
      const key = keys.sort((a, c) => count(c) - count(a))[0]!;
      const expected = models[1]!.history(fromHex(key), { from: PRUNED_TO + 1, limit: 1000 }).entries.map((e) => `${e.version}=${e.value === null ? "∅" : toHex(e.value)}`);
      expect(expected.length).toBeGreaterThan(1);
      const got: string[] = [];
      let to: number | null = VERSIONS;
      for (let pages = 0; to !== null && pages < 100; pages++) {
        const { status, body }: { status: number; body: Page } = await fetchJson<Page>(`/v1/history?store=lockup&key=${key}&limit=1&to=${to}`);
        expect(status).toBe(200);
        expect(body.from).toBe(PRUNED_TO + 1); // the oldest kept version
        got.push(...body.entries.map((e) => `${e.version}=${e.value ?? "∅"}`));
        to = body.next;
      }
      expect(got).toEqual(expected);
      // Each entry proves at its version: /v1/query answers the same value there.
      for (const e of got) {
        const [version, value] = e.split("=") as [string, string];
        const q = await fetchJson<QueryJson>(`/v1/query?store=lockup&key=${key}&height=${version}&prove=true`);
        expect(q.body.value ?? "∅").toBe(value);
        expect(proofsVerify(q.body, "lockup")).toBe(true);
      }
      const reversed = await fetchJson<Page>(`/v1/history?store=lockup&key=${key}&reverse=true&limit=1000`);
      expect(reversed.body.entries.map((e) => `${e.version}=${e.value ?? "∅"}`)).toEqual([...expected].reverse());
      const [late, bad, badKey] = await Promise.all([
        fetchJson<{ error: { code: string } }>(`/v1/history?store=lockup&key=${key}&to=${VERSIONS + 5}`),
        fetchJson<{ error: { code: string } }>(`/v1/history?store=lockup&key=${key}&from=9&to=3`),
        fetchJson<{ error: { code: string } }>("/v1/history?store=lockup&key=zz"),
      ]);
      expect([late.status, late.body.error.code]).toEqual([404, "VERSION_NOT_FOUND"]);
      expect([bad.status, bad.body.error.code]).toEqual([400, "INVALID_ARGUMENT"]);
      expect(badKey.status).toBe(400);
    } finally {
      await server.close();
    }
  });
});

describe("errors", () => {
  it("answer { error: { code, message } } with the status the API promises, never a 500", async () => {
    const k = hexOf(keyAt(1));
    const cases: Array<[string, number, string]> = [
      [`/v1/query?store=bank&key=zz`, 400, "INVALID_ARGUMENT"],
      [`/v1/query?store=bank&key=abc`, 400, "INVALID_ARGUMENT"],
      [`/v1/query?store=bank&key=`, 400, "INVALID_ARGUMENT"],
      [`/v1/query?store=bank&key=${"ab".repeat(65_537)}`, 400, "INVALID_ARGUMENT"],
      [`/v1/query?store=bank`, 400, "INVALID_ARGUMENT"],
      [`/v1/query?key=${k}`, 400, "INVALID_ARGUMENT"],
      [`/v1/query?store=bank&key=${k}&height=abc`, 400, "INVALID_ARGUMENT"],
      [`/v1/query?store=bank&key=${k}&height=0`, 400, "INVALID_ARGUMENT"],
      [`/v1/query?store=bank&key=${k}&height=-1`, 400, "INVALID_ARGUMENT"],
      [`/v1/query?store=bank&key=${k}&height=1.5`, 400, "INVALID_ARGUMENT"],
      [`/v1/query?store=bank&key=${k}&height=99999999999999999`, 400, "INVALID_ARGUMENT"],
      [`/v1/query?store=bank&key=${k}&prove=yes`, 400, "INVALID_ARGUMENT"],
      [`/v1/query?store=bank&key=${k}&key=${k}`, 400, "INVALID_ARGUMENT"],
      [`/v1/query?store=bank&key=${k}&height=${VERSIONS + 1}`, 404, "VERSION_NOT_FOUND"],
      [`/v1/query?store=bank&key=${k}&height=9999999`, 404, "VERSION_NOT_FOUND"],
      [`/v1/query?store=bank&key=${k}&height=${PRUNED_TO}`, 410, "VERSION_PRUNED"],
      [`/v1/query?store=bank&key=${k}&height=1&prove=true`, 410, "VERSION_PRUNED"],
      [`/v1/query?store=nope&key=${k}`, 404, "STORE_NOT_FOUND"],
      [`/v1/query?store=../bank&key=${k}`, 404, "STORE_NOT_FOUND"],
      [`/v1/range?store=bank&limit=0`, 400, "INVALID_ARGUMENT"],
      [`/v1/range?store=bank&limit=1001`, 400, "INVALID_ARGUMENT"],
      [`/v1/range?store=bank&limit=ten`, 400, "INVALID_ARGUMENT"],
      [`/v1/range?store=bank&start=xy`, 400, "INVALID_ARGUMENT"],
      [`/v1/range?store=bank&reverse=1`, 400, "INVALID_ARGUMENT"],
      [`/v1/range?store=bank&height=2`, 410, "VERSION_PRUNED"],
      [`/v1/range?store=bank&height=${VERSIONS + 5}`, 404, "VERSION_NOT_FOUND"],
      [`/v1/range?store=nope`, 404, "STORE_NOT_FOUND"],
      [`/v1/range`, 400, "INVALID_ARGUMENT"],
      [`/v1/nope`, 404, "NOT_FOUND"],
      [`/nope?x=1`, 404, "NOT_FOUND"],
    ];
    for (const [url, status, code] of cases) {
      const r = await get<{ error: { code: string; message: string } }>(url);
      expect([url, r.status, r.body.error?.code]).toEqual([url, status, code]);
      expect(typeof r.body.error.message).toBe("string");
    }
    // A known route under another method: 405 with Allow (serve-remote.test.ts has the rest of it).
    const post = await app.inject({ method: "POST", url: "/v1/query", payload: "{}" });
    expect([post.statusCode, post.headers["allow"], post.json<{ error: { code: string } }>().error.code]).toEqual([405, "GET, HEAD, OPTIONS", "METHOD_NOT_ALLOWED"]);
    const bad = await app.inject({ method: "GET", url: "/v1/query?store=bank&key=%zz" });
    expect(bad.statusCode).toBeLessThan(500);
  });
});

describe("request-validation errors", () => {
  /** What a validator says and a person would not: none of it may reach a client. */
  const JARGON = [/must match pattern/i, /NOT have (more|fewer) than/, /querystring/i, /\bbody\//, /\bparams\//, /required property/, /allowed values/, /must be (string|integer|number|boolean|object|array)\b/, /\^\[/];

  /** A request that gets one parameter wrong, and that parameter. */
  interface Bad {
    param: string;
    url: string;
    /** A JSON-RPC body POSTed to `url`. */
    rpc?: unknown;
  }

  const k = hexOf(keyAt(1));
  // One byte over the 65536 a key may have (the hex check says so), and past the length the schema allows.
  const over = "ab".repeat(65_537);
  const long = "ab".repeat(65_538);
  const huge = "ab".repeat(2 * 65_536 + 1);
  const heights = ["abc", "0", "-1", "1.5", "99999999999999999", "9007199254740992"];
  const rpc = (params: unknown): unknown => ({ jsonrpc: "2.0", id: 1, method: "abci_query", params });
  /** Every route that takes parameters, each parameter wrong in each way it can be (missing, malformed, given twice). */
  const routes: Record<string, Bad[]> = {
    "/v1/query": [
      { param: "key", url: "/v1/query?store=bank" },
      ...["zz", "abc", "", over, long].map((v) => ({ param: "key", url: `/v1/query?store=bank&key=${v}` })),
      { param: "key", url: `/v1/query?store=bank&key=${k}&key=${k}` },
      { param: "store", url: `/v1/query?key=${k}` },
      { param: "store", url: `/v1/query?store=bank&store=lockup&key=${k}` },
      ...heights.map((h) => ({ param: "height", url: `/v1/query?store=bank&key=${k}&height=${h}` })),
      { param: "height", url: `/v1/query?store=bank&key=${k}&height=2&height=3` },
      { param: "prove", url: `/v1/query?store=bank&key=${k}&prove=yes` },
      { param: "prove", url: `/v1/query?store=bank&key=${k}&prove=true&prove=false` },
    ],
    "/v1/range": [
      { param: "store", url: "/v1/range" },
      ...["xy", "abc", over, long].flatMap((v) => ["start", "end"].map((param) => ({ param, url: `/v1/range?store=bank&${param}=${v}` }))),
      ...heights.map((h) => ({ param: "height", url: `/v1/range?store=bank&height=${h}` })),
      ...["ten", "0", "1001", "-5", "1234567890"].map((v) => ({ param: "limit", url: `/v1/range?store=bank&limit=${v}` })),
      { param: "limit", url: "/v1/range?store=bank&limit=1&limit=2" },
      { param: "reverse", url: "/v1/range?store=bank&reverse=1" },
    ],
    "/v1/history": [
      { param: "key", url: "/v1/history?store=bank" },
      ...["zz", "", over, long].map((v) => ({ param: "key", url: `/v1/history?store=bank&key=${v}` })),
      ...heights.flatMap((h) => ["from", "to"].map((param) => ({ param, url: `/v1/history?store=bank&key=${k}&${param}=${h}` }))),
      ...["ten", "0", "1001"].map((v) => ({ param: "limit", url: `/v1/history?store=bank&key=${k}&limit=${v}` })),
      { param: "reverse", url: `/v1/history?store=bank&key=${k}&reverse=no` },
    ],
    "/v1/changes": [
      { param: "from", url: "/v1/changes?store=bank&to=6" },
      { param: "to", url: "/v1/changes?store=bank&from=6" },
      ...heights.flatMap((h) => [
        { param: "from", url: `/v1/changes?store=bank&from=${h}&to=6` },
        { param: "to", url: `/v1/changes?store=bank&from=6&to=${h}` },
      ]),
      { param: "to", url: "/v1/changes?store=bank&from=7&to=6" },
      { param: "store", url: "/v1/changes?from=6&to=7" },
    ],
    "/v1/ops": [
      { param: "from", url: "/v1/ops?store=bank" },
      ...heights.map((h) => ({ param: "from", url: `/v1/ops?store=bank&from=${h}` })),
      ...heights.map((h) => ({ param: "to", url: `/v1/ops?store=bank&from=6&to=${h}` })),
      { param: "to", url: "/v1/ops?store=bank&from=7&to=6" },
      ...["soon", "-1", "1.5"].map((v) => ({ param: "wait", url: `/v1/ops?store=bank&from=6&wait=${v}` })),
      { param: "store", url: "/v1/ops?from=6" },
    ],
    "/v1/snapshot": [
      ...heights.map((h) => ({ param: "height", url: `/v1/snapshot?store=bank&height=${h}` })),
      { param: "store", url: "/v1/snapshot?store=bank&store=bank" },
      { param: "store", url: "/v1/snapshot" },
    ],
    "/abci_query": [
      { param: "data", url: `/abci_query?path="/store/bank/key"&data=0xzz` },
      { param: "data", url: `/abci_query?path="/store/bank/key"&data=0x${huge}` },
      { param: "data", url: `/abci_query?path="/store/bank/key"&data=0x${k}&data=0x${k}` },
      { param: "path", url: `/abci_query?path="/store/bank/key"&path="/store/lockup/key"&data=0x${k}` },
      ...["x", "-1", "1.5", "99999999999999999"].map((h) => ({ param: "height", url: `/abci_query?path="/store/bank/key"&data=0x${k}&height=${h}` })),
      { param: "height", url: `/abci_query?path="/store/bank/key"&data=0x${k}&height=5&height=6` },
      { param: "prove", url: `/abci_query?path="/store/bank/key"&data=0x${k}&prove=maybe` },
      { param: "prove", url: `/abci_query?path="/store/bank/key"&data=0x${k}&prove=true&prove=true` },
    ],
    // JSON-RPC: params by name and by position.
    "/": [
      { param: "path", url: "/", rpc: rpc({ path: 5, data: k }) },
      { param: "data", url: "/", rpc: rpc({ path: "/store/bank/key", data: 5 }) },
      { param: "data", url: "/", rpc: rpc({ path: "/store/bank/key", data: "zz" }) },
      { param: "data", url: "/", rpc: rpc({ path: "/store/bank/key", data: huge }) },
      ...["x", -1, 1.5, "99999999999999999", true].map((height) => ({ param: "height", url: "/", rpc: rpc({ path: "/store/bank/key", data: k, height }) })),
      { param: "prove", url: "/", rpc: rpc({ path: "/store/bank/key", data: k, prove: "yes" }) },
      { param: "prove", url: "/", rpc: rpc(["/store/bank/key", k, "5", "yes"]) },
      { param: "params", url: "/", rpc: rpc(["/store/bank/key", k, "5", true, 5]) },
      { param: "params", url: "/", rpc: rpc("path") },
    ],
  };
  /** Routes that take no parameter (any given is ignored). */
  const PARAMETERLESS = ["/v1/status", "/status", "/health", "/abci_info", "/metrics", "/explorer/:file", "/explorer/verify/:file", "/explorer/noble/:file"];

  it("covers every route of the service: each takes no parameter or is walked below", () => {
    // printRoutes draws the routes as a tree, four characters of indentation a level, each node the part of the path
    // after its parent's; a node with methods is a route.
    const stack: string[] = [];
    const paths: string[] = [];
    for (const line of app.printRoutes({ commonPrefix: false }).split("\n")) {
      const m = /^([│ ]*)[├└]── (\S+)( \(.*\))?$/.exec(line);
      if (m === null) continue;
      stack.length = m[1]!.length / 4;
      stack.push(m[2]!);
      if (m[3] !== undefined) paths.push(stack.join(""));
    }
    expect(paths.sort()).toEqual([...Object.keys(routes), ...PARAMETERLESS].sort());
  });

  it("answer each bad parameter in a plain sentence naming it, never in the validator's words", async () => {
    const answers: Array<{ route: string; param: string; url: string; status: number; message: string }> = [];
    for (const [route, bad] of Object.entries(routes)) {
      for (const { param, url, rpc: body } of bad) {
        const r = await app.inject(body === undefined ? { method: "GET", url } : { method: "POST", url, payload: JSON.stringify(body), headers: { "content-type": "application/json" } });
        const json = r.json<{ error?: { message: string; data?: string }; result?: { response: { log: string; code: number } } }>();
        // v1: the error's message; JSON-RPC: the error's data (its message is the standard "Invalid params"), or the
        // log of an abci_query the SDK refuses (a key over the limit).
        const message = json.error?.data ?? json.error?.message ?? (json.result?.response.code !== 0 ? json.result?.response.log : undefined) ?? `(no error: ${r.body.slice(0, 100)})`;
        answers.push({ route, param, url, status: r.statusCode, message });
      }
    }
    for (const a of answers) {
      const where = `${a.url.slice(0, 80)}: ${a.message}`;
      expect(a.status, where).toBeGreaterThanOrEqual(a.route === "/" ? 200 : 400);
      expect(a.status, where).toBeLessThan(500);
      for (const j of JARGON) expect(a.message, where).not.toMatch(j);
      expect(a.message, where).toMatch(new RegExp(`(^|[^a-z])${a.param}([^a-z]|$)`));
      // A sentence of some substance: more than the parameter's name.
      expect(a.message.length, where).toBeGreaterThan(a.param.length + 12);
    }
    // The words for what a parameter allows, as the schema's description gives them.
    const message = (url: string): string | undefined => answers.find((a) => a.url === url)?.message;
    expect(message(`/v1/query?store=bank&key=${k}&height=abc`)).toBe(`height must be a whole number from 1 to ${Number.MAX_SAFE_INTEGER}, got "abc"`);
    expect(message(`/v1/query?store=bank&key=${k}&height=0`)).toBe(`height must be a whole number from 1 to ${Number.MAX_SAFE_INTEGER}, got "0"`);
    expect(message("/v1/query?store=bank")).toBe("key is required: hex of 1 to 65536 bytes (digits 0-9 a-f, two a byte)");
    expect(message(`/v1/query?store=bank&key=${long}`)).toMatch(/^key must be hex of 1 to 65536 bytes .*, got "abab.*" \(131076 characters\)$/);
    expect(message(`/v1/query?store=bank&key=${over}`)).toBe("key is 65537 bytes, more than the 65536 allowed");
    expect(message(`/v1/query?store=bank&key=${k}&prove=yes`)).toBe('prove must be true or false, got "yes"');
    expect(message(`/v1/query?store=bank&key=${k}&height=2&height=3`)).toBe("height was given more than once");
    expect(message("/v1/range?store=bank&limit=ten")).toBe('limit must be a whole number from 1 to 1000, got "ten"');
    expect(message("/v1/range?store=bank&limit=1001")).toBe("limit must be a whole number from 1 to 1000, got 1001");
  });
});

describe("CometBFT RPC", () => {
  interface AbciResponse {
    code: number;
    log: string;
    key: string | null;
    value: string | null;
    height: string;
    codespace: string;
    proofOps: { ops: Array<{ type: string; key: string; data: string }> } | null;
  }
  interface RpcAnswer<R = { response: AbciResponse }> {
    jsonrpc: string;
    id: string | number | null;
    result: R;
    error: { code: number; message: string; data: string };
  }
  interface StatusResult {
    node_info: { version: string };
    sync_info: { latest_block_height: string; latest_app_hash: string };
  }
  const rpc = async <T = RpcAnswer>(body: unknown, raw = false): Promise<{ status: number; body: T }> => {
    const r = await app.inject({ method: "POST", url: "/", payload: raw ? (body as string) : JSON.stringify(body), headers: { "content-type": "application/json" } });
    return { status: r.statusCode, body: (r.body === "" ? undefined : JSON.parse(r.body)) as T };
  };
  const query = (params: unknown, id: number | string = 1): Promise<{ status: number; body: RpcAnswer }> =>
    rpc({ jsonrpc: "2.0", id, method: "abci_query", params });
  const ops = (r: AbciResponse): ProofOp[] =>
    r.proofOps!.ops.map((o) => ({ type: o.type, key: Buffer.from(o.key, "base64"), data: Buffer.from(o.data, "base64") }));

  it("answers abci_query as the SDK does, with proof ops that verify as cosmjs verifies them", async () => {
    for (const v of [PRUNED_TO + 1, 8, VERSIONS]) {
      for (const [i, store] of STORES.entries()) {
        for (const k of [keyAt(v * 3), "kabsent"]) {
          const { status, body } = await query({ path: `/store/${store}/key`, data: hexOf(k), height: String(v), prove: true }, `q${v}`);
          expect(status).toBe(200);
          expect([body.jsonrpc, body.id]).toEqual(["2.0", `q${v}`]);
          const r = body.result.response as AbciResponse;
          expect([r.code, r.height, r.key]).toEqual([0, String(v), Buffer.from(k).toString("base64")]);
          const want = models[i]!.at(v).get(b(k));
          expect(r.value).toBe(want === undefined ? null : Buffer.from(want).toString("base64"));
          const storeHash = verifyAbci(ops(r), store, b(k), want ?? new Uint8Array(0), fromHex(appHashes[v]!));
          expect(toHex(storeHash)).toBe(toHex(models[i]!.at(v).hash));
        }
      }
    }
    // Positional params, a numeric height, no proof.
    const { body } = await query(["/store/bank/key", hexOf(keyAt(3)), VERSIONS, false]);
    expect(body.result.response.proofOps).toBeNull();
    expect(body.result.response.height).toBe(String(VERSIONS));
  });

  it("reports failures with the SDK's codes, and malformed requests with JSON-RPC errors", async () => {
    const k = hexOf(keyAt(1));
    const code = async (params: unknown): Promise<[number, string]> => {
      const r = (await query(params)).body.result.response as AbciResponse;
      return [r.code, r.codespace];
    };
    expect(await code({ path: "/store/nope/key", data: k })).toEqual([6, "sdk"]);
    expect(await code({ path: "/store/bank/subspace", data: k })).toEqual([6, "sdk"]);
    expect(await code({ path: "/app/version", data: k })).toEqual([6, "sdk"]);
    expect(await code({ path: "/store/bank/key", data: "" })).toEqual([2, "sdk"]);
    expect(await code({ path: "/store/bank/key", data: k, height: String(VERSIONS + 1) })).toEqual([26, "sdk"]);
    expect(await code({ path: "/store/bank/key", data: k, height: "2", prove: true })).toEqual([18, "sdk"]);
    expect(await code({ path: "/store/bank/key", data: hexOf("empty"), prove: true })).toEqual([18, "sdk"]);
    expect(await code({ path: "/store/bank/key", data: "ab".repeat(65_537) })).toEqual([18, "sdk"]);

    const error = async (body: unknown, raw = false): Promise<[number, number]> => {
      const r = await rpc(body, raw);
      return [r.status, r.body.error.code];
    };
    expect(await error({ jsonrpc: "2.0", id: 1, method: "abci_query", params: { path: "/store/bank/key", data: "zz" } })).toEqual([200, -32602]);
    expect(await error({ jsonrpc: "2.0", id: 1, method: "abci_query", params: { path: 5 } })).toEqual([200, -32602]);
    expect(await error({ jsonrpc: "2.0", id: 1, method: "abci_query", params: { path: "/store/bank/key", data: k, height: "x" } })).toEqual([200, -32602]);
    expect(await error({ jsonrpc: "2.0", id: 1, method: "abci_query", params: ["a", "b", "1", true, 5] })).toEqual([200, -32602]);
    expect(await error({ jsonrpc: "2.0", id: 1, method: "broadcast_tx_sync", params: {} })).toEqual([200, -32601]);
    expect(await error({ jsonrpc: "2.0", id: 1, method: "toString" })).toEqual([200, -32601]);
    expect(await error({ jsonrpc: "1.0", id: 1, method: "status" })).toEqual([200, -32600]);
    expect(await error("{not json", true)).toEqual([400, -32700]);
    expect(await error("", true)).toEqual([400, -32700]);
    expect(await error([], false)).toEqual([400, -32600]);
    // A notification (no id) gets no answer; a batch gets one answer per request, in order.
    expect((await rpc({ jsonrpc: "2.0", method: "status" })).status).toBe(204);
    const batch = await rpc<RpcAnswer[]>([
      { jsonrpc: "2.0", id: 1, method: "health" },
      { jsonrpc: "2.0", method: "status" },
      { jsonrpc: "2.0", id: 2, method: "nope" },
    ]);
    expect(batch.body.map((a) => a.id)).toEqual([1, 2]);
    expect(batch.body[1]!.error.code).toBe(-32601);
    // A form-encoded body (curl --data) is read as JSON all the same.
    const form = await app.inject({ method: "POST", url: "/", payload: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "health" }), headers: { "content-type": "application/x-www-form-urlencoded" } });
    expect(form.json()).toEqual({ jsonrpc: "2.0", id: 7, result: {} });
  });

  it("answers the URI forms GET /abci_query and GET /status", async () => {
    const v = VERSIONS - 1;
    const k = keyAt(v * 3);
    const r = await get<RpcAnswer>(`/abci_query?path="/store/lockup/key"&data=0x${hexOf(k)}&height=${v}&prove=true`);
    expect([r.status, r.body.id]).toEqual([200, -1]);
    const res = r.body.result.response as AbciResponse;
    const want = models[1]!.at(v).get(b(k)) ?? new Uint8Array(0);
    verifyAbci(ops(res), "lockup", b(k), want, fromHex(appHashes[v]!));
    const quoted = await get<RpcAnswer>(`/abci_query?path=%22/store/lockup/key%22&data=%22${k}%22&height=%22${v}%22`);
    expect(quoted.body.result.response.value).toBe(res.value);
    expect((await get<RpcAnswer>(`/abci_query?path="/store/lockup/key"&data=0xzz`)).status).toBe(400);
    const s = await get<RpcAnswer<StatusResult>>("/status");
    const sync = s.body.result.sync_info;
    expect([sync.latest_block_height, sync.latest_app_hash]).toEqual([String(VERSIONS), appHashes[VERSIONS]!.toUpperCase()]);
    expect(s.body.result.node_info.version).toMatch(/^0\.38\./);
    const info = await get<RpcAnswer<{ response: { last_block_height: string } }>>("/abci_info");
    expect(info.body.result.response.last_block_height).toBe(String(VERSIONS));
  });
});

describe("the service", () => {
  it("counts requests, latency and refreshes in /metrics", async () => {
    await get("/v1/status");
    const r = await app.inject({ method: "GET", url: "/metrics" });
    expect(r.statusCode).toBe(200);
    expect(r.headers["content-type"]).toContain("text/plain");
    const text = r.body;
    expect(text).toMatch(/iavlite_http_requests_total\{route="\/v1\/query",method="GET",status="200"\} \d+/);
    expect(text).toMatch(/iavlite_http_requests_total\{route="\/v1\/query",method="GET",status="410"\} \d+/);
    expect(text).toMatch(/iavlite_http_requests_total\{route="unmatched",method="GET",status="404"\} \d+/);
    expect(text).toMatch(/iavlite_http_request_duration_seconds_bucket\{le="0.005",route="\/v1\/query"\} \d+/);
    expect(text).toContain(`iavlite_latest_version ${VERSIONS}`);
    expect(text).toMatch(/iavlite_refreshes_total [1-9]\d*/);
  });

  it("follows versions committed after it started", async () => {
    const d = tempDir();
    const w = MultiTree.open(d, { stores: ["a", "b"] });
    w.tree("a").set(b("x"), b("1"));
    w.commit();
    const s = await serverOn(d, { refreshMs: 50 });
    try {
      w.tree("a").set(b("x"), b("2"));
      const { appHash } = w.commit();
      // A height above the known latest looks at once; without a height, within refreshMs.
      const at2 = await get<QueryJson>(`/v1/query?store=a&key=${hexOf("x")}&height=2`, s);
      expect([at2.status, at2.body.value, at2.body.appHash]).toEqual([200, hexOf("2"), toHex(appHash)]);
      w.tree("b").set(b("y"), b("3"));
      w.commit();
      await new Promise((r) => setTimeout(r, 60));
      expect((await get<{ latest: number }>("/v1/status", s)).body.latest).toBe(3);
    } finally {
      await s.close();
      w.close();
    }
  });

  it("serves a plain store folder (store optional, no app hash) and a subset of stores", async () => {
    const d = join(tempDir(), "plain");
    mkdirSync(d);
    const t = Tree.open(d);
    t.set(b("a"), b("1"));
    t.commit();
    t.close();
    const s = await serverOn(d);
    try {
      const q = await get<QueryJson>(`/v1/query?key=${hexOf("a")}&prove=true`, s);
      expect([q.status, q.body.value, q.body.appHash, q.body.proof.app]).toEqual([200, hexOf("1"), null, null]);
      expect(proofsVerify(q.body, "plain")).toBe(true);
      expect((await get<QueryJson>(`/v1/query?store=plain&key=${hexOf("a")}`, s)).status).toBe(200);
      const status = await get<{ appHash: string | null; stores: Array<{ name: string }> }>("/v1/status", s);
      expect([status.body.appHash, status.body.stores.map((x) => x.name)]).toEqual([null, ["plain"]]);
      const abci = await s.inject({ method: "POST", url: "/", payload: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "abci_query", params: { path: "/store/plain/key", data: hexOf("a"), prove: true } }) });
      expect(abci.json().result.response.proofOps.ops.map((o: { type: string }) => o.type)).toEqual(["ics23:iavl"]);
    } finally {
      await s.close();
    }
    const some = await serverOn(dir, {}, ["lockup"]);
    try {
      const status = await get<{ stores: Array<{ name: string }> }>("/v1/status", some);
      expect(status.body.stores.map((x) => x.name)).toEqual(["lockup"]);
      expect((await get(`/v1/query?store=bank&key=${hexOf("k1")}`, some)).status).toBe(404);
      const q = await get<QueryJson>(`/v1/query?store=lockup&key=${hexOf("k1")}&prove=true`, some);
      expect(q.body.appHash).toBe(appHashes[VERSIONS]);
      expect(proofsVerify(q.body, "lockup")).toBe(true);
    } finally {
      await some.close();
    }
  });
});
