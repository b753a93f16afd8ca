/**
 * The service's bounds against clients that misbehave, over real sockets: a client that reads the first chunk of a
 * stream (`/v1/ops`, `/v1/snapshot`, `/v1/changes`) and then stops reading makes the service stop reading the store
 * (a chunk or two ahead, not the span), and its connection is closed at the stall timeout; streams past the cap get
 * 503 TOO_MANY_STREAMS with Retry-After, and a slot is free again once a stream closes; a JSON-RPC body that is an
 * object but not a request gets -32600; CONNECT gets the JSON 405/404 every other wrong method gets.
 */
import http from "node:http";
import net, { type AddressInfo, type Socket } from "node:net";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MultiReader, Tree, type ReadonlyTree, type VersionChange } from "../src/index.js";
import { createServer } from "../src/serve/server.js";
import type { ServeOptions } from "../src/serve/serve-options.js";
import { tempDir } from "./backends.js";
import { b } from "./helpers.js";

const VERSIONS = 600;
const KEYS = 4;
const VALUE_BYTES = 16_384;
/** Bytes of values in the store: each stream carries at least this much (~39 MiB). */
const TOTAL = VERSIONS * KEYS * VALUE_BYTES;
/** Most value bytes a stream may hold beyond what it wrote to the socket: a chunk or two, not the 8 MiB it read ahead. */
const HELD = 2 * 2 ** 20;
const STALL_MS = 400;

type ErrorJson = { error: { code: string; message: string } };

let dir: string;
const servers: FastifyInstance[] = [];
/** The client side of stalled connections, destroyed at the end. */
const clients: Socket[] = [];

type Served = { url: string; pulled: Pulled; sockets: Map<number, Socket> };

/** What a served reader pulled from the store, in values. */
interface Pulled {
  ops: number;
  snapshot: number;
  changes: number;
}

/** A live server over `dir` whose reads of the store are counted, and the server side of each connection. */
async function serve(o: ServeOptions): Promise<Served> {
  const reader = MultiReader.open(dir);
  const pulled: Pulled = { ops: 0, snapshot: 0, changes: 0 };
  const store = reader.store("big");
  const ops = store.operations.bind(store);
  store.operations = function* (from: number, to: number) {
    for (const v of ops(from, to)) {
      pulled.ops += v.ops.length;
      yield v;
    }
  } as typeof store.operations;
  const changes = store.changes.bind(store);
  store.changes = function* (from: number, to: number): Generator<VersionChange> {
    for (const c of changes(from, to)) {
      pulled.changes++;
      yield c;
    }
  };
  const at = store.atRefreshed.bind(store);
  store.atRefreshed = (version: number): ReadonlyTree => {
    const view = at(version);
    const exp = view.export.bind(view);
    view.export = function* () {
      for (const item of exp()) {
        // Values: only a leaf carries one.
        if (item.height === 0) pulled.snapshot++;
        yield item;
      }
    } as typeof view.export;
    return view;
  };
  const app = await createServer(reader, { refreshMs: 0, ...o });
  servers.push(app);
  const sockets = new Map<number, Socket>();
  app.server.on("connection", (s: Socket) => sockets.set(s.remotePort!, s));
  await app.listen({ host: "127.0.0.1", port: 0 });
  return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, pulled, sockets };
}

/**
 * A GET to `s` whose answer is read up to its first chunk, then no more: the client stops reading (and so would not
 * see the service close the connection: `closed` is the service's side closing).
 */
function stall(s: Served, path: string): Promise<{ res: http.IncomingMessage; server: Socket; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${s.url}${path}`, (res) => {
      const socket = res.socket;
      clients.push(socket);
      const server = s.sockets.get(socket.localPort!)!;
      const closed = new Promise<void>((r) => (server.closed ? r() : server.once("close", () => r())));
      if (res.statusCode !== 200) {
        resolve({ res, server, closed });
        return;
      }
      res.once("data", () => {
        res.pause();
        // Nothing more leaves the kernel's buffers for this process.
        socket.pause();
        resolve({ res, server, closed });
      });
    });
    req.on("error", reject);
  });
}

beforeAll(() => {
  dir = join(tempDir("iavlite-bounds-"), "big");
  const t = Tree.open(dir);
  const value = new Uint8Array(VALUE_BYTES).fill(0xab);
  for (let v = 1; v <= VERSIONS; v++) {
    for (let k = 0; k < KEYS; k++) t.set(b(`key-${v}-${k}`), value);
    t.commit();
  }
  t.close();
});

afterAll(async () => {
  for (const c of clients) c.destroy();
  for (const s of servers) await s.close();
});

describe("a client that stops reading a stream", () => {
  const routes = [
    ["ops", `/v1/ops?from=1&to=${VERSIONS}`],
    ["snapshot", "/v1/snapshot"],
    ["changes", `/v1/changes?from=1&to=${VERSIONS}`],
  ] as const;

  for (const [name, path] of routes) {
    it(`is sent no more than the socket takes, and is closed at the stall timeout: ${path}`, async () => {
      // A request timeout far past the stall timeout: what closes the connection is the stall.
      const s = await serve({ stallTimeoutMs: STALL_MS, requestTimeoutMs: 600_000 });
      const { res, server, closed } = await stall(s, path);
      expect(res.statusCode).toBe(200);
      await closed;
      // What the service read from the store went to the socket, but for a chunk or two (HELD); what the socket took
      // is the kernel's buffers' worth (their size moves with the machine and its load), far short of the span.
      const pulled = s.pulled[name] * VALUE_BYTES;
      expect(pulled).toBeGreaterThan(0);
      expect(pulled).toBeLessThan(server.bytesWritten + HELD);
      expect(server.bytesWritten).toBeLessThan(TOTAL * (name === "changes" ? 2 : 1) / 2);
      expect(server.destroyed).toBe(true);
    }, 60_000);
  }
});

describe("the cap on streams", () => {
  it("answers 503 TOO_MANY_STREAMS with Retry-After past it, and frees a slot when a stream closes", async () => {
    const s = await serve({ stallTimeoutMs: STALL_MS, maxStreams: 2, requestTimeoutMs: 600_000 });
    const a = await stall(s, `/v1/ops?from=1&to=${VERSIONS}`);
    const c = await stall(s, `/v1/changes?from=1&to=${VERSIONS}`);
    expect([a.res.statusCode, c.res.statusCode]).toEqual([200, 200]);
    for (const path of ["/v1/snapshot", "/v1/ops?from=1&to=2", "/v1/changes?from=1&to=1"]) {
      const r = await fetch(`${s.url}${path}`);
      expect([r.status, r.headers.get("retry-after"), ((await r.json()) as ErrorJson).error.code]).toEqual([503, "2", "TOO_MANY_STREAMS"]);
    }
    // Other routes are not streams: they are answered as ever.
    expect((await fetch(`${s.url}/v1/status`)).status).toBe(200);
    await a.closed;
    await c.closed;
    // Both slots are free again once those closed, and the refused requests took none.
    const [x, y] = await Promise.all([stall(s, "/v1/snapshot"), stall(s, `/v1/ops?from=1&to=${VERSIONS}`)]);
    expect([x.res.statusCode, y.res.statusCode]).toEqual([200, 200]);
    expect((await fetch(`${s.url}/v1/ops?from=1&to=2`)).status).toBe(503);
    await Promise.all([x.closed, y.closed]);
  }, 60_000);
});

describe("wrong requests answered as the rest", () => {
  let url: string;
  beforeAll(async () => {
    ({ url } = await serve({}));
  });

  const rpc = async (body: unknown): Promise<{ status: number; json: unknown }> => {
    const r = await fetch(`${url}/`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const text = await r.text();
    return { status: r.status, json: text === "" ? undefined : JSON.parse(text) };
  };

  it("answers a JSON-RPC object that is not a request -32600, with or without an id; a valid one without id is a notification", async () => {
    const invalid = (data: string) => ({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "Invalid Request", data } });
    expect(await rpc({ x: 1 })).toEqual({ status: 200, json: invalid('jsonrpc must be "2.0"') });
    expect(await rpc({ jsonrpc: "2.0" })).toEqual({ status: 200, json: invalid("method must be a string") });
    expect(await rpc({ jsonrpc: "2.0", method: 7, id: 3 })).toEqual({ status: 200, json: { ...invalid("method must be a string"), id: 3 } });
    expect(await rpc([{ x: 1 }, { jsonrpc: "2.0", method: "health" }])).toEqual({ status: 200, json: [invalid('jsonrpc must be "2.0"')] });
    expect((await rpc({ jsonrpc: "2.0", method: "health" })).status).toBe(204);
    expect((await rpc({ jsonrpc: "2.0", method: "nosuch" })).status).toBe(204);
  });

  /** The raw answer to `head`, read until the service closes the connection. */
  const raw = (head: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const u = new URL(url);
      const s = net.connect(Number(u.port), u.hostname, () => s.write(head));
      let text = "";
      s.setEncoding("utf8");
      s.on("data", (d: string) => (text += d));
      s.on("close", () => resolve(text));
      s.on("error", reject);
    });

  const parse = (text: string): { status: number; type: string | undefined; allow: string | undefined; body: ErrorJson } => {
    const [head, body] = text.split("\r\n\r\n", 2) as [string, string];
    const lines = head.split("\r\n");
    const header = (n: string): string | undefined => lines.find((l) => l.toLowerCase().startsWith(`${n}:`))?.slice(n.length + 1).trim();
    return { status: Number(lines[0]!.split(" ")[1]), type: header("content-type"), allow: header("allow"), body: JSON.parse(body) as ErrorJson };
  };

  it("answers CONNECT with the JSON 405 or 404 of any other wrong method, and closes the connection", async () => {
    const known = parse(await raw("CONNECT /v1/status HTTP/1.1\r\nHost: x\r\n\r\n"));
    const asGet = parse(await raw("DELETE /v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    expect(known.status).toBe(405);
    expect(known.body.error.code).toBe("METHOD_NOT_ALLOWED");
    expect([known.type, known.allow]).toEqual([asGet.type, asGet.allow]);
    expect(parse(await raw("CONNECT /nowhere HTTP/1.1\r\nHost: x\r\n\r\n")).body.error.code).toBe("NOT_FOUND");
    // A proxy's target (no path) is no URL of this service: a JSON 400, as for any method.
    const proxy = parse(await raw("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"));
    expect([proxy.status, proxy.type, typeof proxy.body.error.code]).toEqual([400, asGet.type, "string"]);
  });
});
