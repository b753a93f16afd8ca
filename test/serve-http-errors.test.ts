/**
 * Errors found below the routes, over raw sockets to a real server: a body or headers that stall, a bad
 * percent-encoding, a path parameter too long, a key too large for the URL, headers over the limit, a request line
 * that does not parse. Each gets exactly one answer in the API's error shape, is counted in /metrics, and writes
 * nothing to stderr (a client's fault is not the server's, and a log line a client can cause at will is a flood).
 */
import net from "node:net";
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi, type MockInstance } from "vitest";
import { MultiReader, MultiTree, toHex } from "../src/index.js";
import { createServer } from "../src/serve/server.js";
import { tempDir } from "./backends.js";
import { b } from "./helpers.js";

/** Short, so that the stall tests are too. */
const TIMEOUT_MS = 300;

let app: FastifyInstance;
let port: number;
let stderr: MockInstance<typeof process.stderr.write>;

beforeAll(async () => {
  const dir = tempDir("iavlite-http-errors-");
  const w = MultiTree.open(dir, { stores: ["bank"] });
  w.tree("bank").set(b("k"), b("v"));
  w.commit();
  w.close();
  app = await createServer(MultiReader.open(dir), { refreshMs: 0, requestTimeoutMs: TIMEOUT_MS });
  await app.listen({ host: "127.0.0.1", port: 0 });
  port = (app.server.address() as AddressInfo).port;
});

afterAll(async () => app.close());

// Passes writes through, and remembers them.
beforeEach(() => {
  stderr = vi.spyOn(process.stderr, "write");
});

afterEach(() => {
  stderr.mockRestore();
});

/** What the server wrote to stderr during the test. */
const logged = (): string[] => stderr.mock.calls.map((c) => String(c[0]));

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
  /** Bytes after the first answer (a second answer, say). */
  rest: string;
  /** Whether the server closed the connection. */
  closed: boolean;
  /** When the first byte came, ms after sending. */
  ms: number;
}

/**
 * Sends `data` on a new connection, then nothing more, and reads until the server closes the connection (every case
 * here closes it; the test's timeout is the limit, not a clock of its own); parses the first answer.
 */
function exchange(data: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    let start = 0;
    let ms = -1;
    const done = (closed: boolean): void => {
      s.destroy();
      const all = Buffer.concat(chunks);
      const end = all.indexOf("\r\n\r\n");
      if (end < 0) return reject(new Error(`no answer: ${JSON.stringify(all.toString("latin1").slice(0, 200))}`));
      const [statusLine, ...lines] = all.subarray(0, end).toString("latin1").split("\r\n");
      const headers: Record<string, string> = {};
      for (const l of lines) {
        const at = l.indexOf(":");
        headers[l.slice(0, at).trim().toLowerCase()] = l.slice(at + 1).trim();
      }
      const length = Number(headers["content-length"]);
      const body = all.subarray(end + 4, end + 4 + length).toString("utf8");
      resolve({
        status: Number(statusLine!.split(" ")[1]),
        headers,
        body: JSON.parse(body) as unknown,
        rest: all.subarray(end + 4 + length).toString("latin1"),
        closed,
        ms,
      });
    };
    s.on("connect", () => {
      start = performance.now();
      s.write(data);
    });
    s.on("data", (d: Buffer) => {
      if (ms < 0) ms = performance.now() - start;
      chunks.push(d);
    });
    // A reset after the answer is still a close; the answer is what is checked.
    s.on("error", () => undefined);
    s.on("close", () => done(true));
  });
}

/** The value of `iavlite_http_requests_total{labels}` (0 when absent). */
async function requests(labels: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const m = text.match(new RegExp(`^iavlite_http_requests_total\\{${labels.replace(/[/.]/g, "\\$&")}\\} (\\d+)$`, "m"));
  return m === null ? 0 : Number(m[1]);
}

/** Runs `send`, and returns its answer with how much the counter of `labels` grew meanwhile. */
async function counted(labels: string, send: () => Promise<Answer>): Promise<Answer & { counted: number }> {
  const before = await requests(labels);
  const a = await send();
  return { ...a, counted: (await requests(labels)) - before };
}

const errorShape = (code: string): unknown => ({ error: { code, message: expect.any(String) } });

describe("errors below the routes", () => {
  it("a stalled body gets one 408 REQUEST_TIMEOUT at the request timeout, and the connection closes", async () => {
    const a = await counted('route="/",method="POST",status="408"', () =>
      exchange("POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"),
    );
    expect([a.status, a.body, a.rest, a.closed, a.headers["connection"]]).toEqual([408, errorShape("REQUEST_TIMEOUT"), "", true, "close"]);
    expect(a.ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(a.counted).toBe(1);
    expect(await requests('route="/",method="POST",status="503"')).toBe(0);
    expect(logged()).toEqual([]);
  });

  it("stalled headers get one 408 REQUEST_TIMEOUT, and the connection closes", async () => {
    const a = await counted('route="unmatched",method="unknown",status="408"', () => exchange("GET /v1/status HTTP/1.1\r\nHost: x\r\n"));
    expect([a.status, a.body, a.rest, a.closed, a.headers["connection"]]).toEqual([408, errorShape("REQUEST_TIMEOUT"), "", true, "close"]);
    expect(a.counted).toBe(1);
    expect(logged()).toEqual([]);
  });

  it("an answer sent before its request's body arrived closes the connection: no second answer later", async () => {
    const a = await exchange("GET /v1/status HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{");
    // 200, not the 408 of a request that waited for its body.
    expect([a.status, a.rest, a.closed, a.headers["connection"]]).toEqual([200, "", true, "close"]);
    expect(logged()).toEqual([]);
  });

  it("a bad percent-encoding answers 400 INVALID_ARGUMENT, and a path parameter too long 404 NOT_FOUND", async () => {
    const bad = await counted('route="unmatched",method="GET",status="400"', () => exchange("GET /v1/%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    expect([bad.status, bad.body, bad.rest, bad.counted]).toEqual([400, errorShape("INVALID_ARGUMENT"), "", 1]);
    const long = await counted('route="unmatched",method="GET",status="404"', () =>
      exchange(`GET /explorer/${"a".repeat(300)}.js HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`),
    );
    expect([long.status, long.body, long.rest, long.counted]).toEqual([404, errorShape("NOT_FOUND"), "", 1]);
    expect(logged()).toEqual([]);
  });

  it("a 200 KiB key in the URL answers 400 INVALID_ARGUMENT; headers over the limit 431 HEADERS_TOO_LARGE", async () => {
    const key = "ab".repeat(200 * 1024);
    const big = await counted('route="/v1/query",method="GET",status="400"', () =>
      exchange(`GET /v1/query?store=bank&key=${key} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`),
    );
    expect([big.status, big.body, big.counted]).toEqual([400, errorShape("INVALID_ARGUMENT"), 1]);
    // Both bounds of a range at the 64 KiB limit still fit.
    const bound = "ff".repeat(65_536);
    const range = await exchange(`GET /v1/range?store=bank&start=${toHex(b("k"))}&end=${bound} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    const both = await exchange(`GET /v1/range?store=bank&start=${"00".repeat(65_536)}&end=${bound} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect([range.status, both.status]).toEqual([200, 200]);
    const huge = await counted('route="unmatched",method="unknown",status="431"', () =>
      exchange(`GET /v1/status HTTP/1.1\r\nHost: x\r\nX-Pad: ${"a".repeat(1 << 20)}\r\n\r\n`),
    );
    expect([huge.status, huge.body, huge.rest, huge.closed, huge.counted]).toEqual([431, errorShape("HEADERS_TOO_LARGE"), "", true, 1]);
    expect(logged()).toEqual([]);
  });

  it("a request line or header that does not parse answers 400 INVALID_ARGUMENT, and the connection closes", async () => {
    for (const raw of ["HELLO\r\n\r\n", "GET /v1/status HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n"]) {
      const a = await counted('route="unmatched",method="unknown",status="400"', () => exchange(raw));
      expect([a.status, a.body, a.rest, a.closed, a.headers["connection"], a.counted]).toEqual([400, errorShape("INVALID_ARGUMENT"), "", true, "close", 1]);
    }
    expect(logged()).toEqual([]);
  });
});
