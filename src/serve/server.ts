/**
 * The query service (`iavlite serve`): a fastify server over a read-only multi-store handle, with the v1 API
 * (routes-v1.ts), the CometBFT RPC (abci.ts), Prometheus metrics (metrics.ts) and the explorer page (explorer.ts),
 * each a plugin of its own. It only reads: it never takes the writer lock, never writes and never holds a read
 * transaction open between statements.
 *
 * Requests are answered one at a time on the event loop (better-sqlite3 reads are synchronous), each bounded: keys
 * of at most `maxKeyBytes`, range pages of at most 1000 pairs and `rangeBytes` bytes, change streams of at most 1000
 * versions, and a `requestTimeoutMs` for receiving a request and for answering it (a request not received by then
 * gets one 408 and its connection is closed; a stream not done by then is cut).
 * @module
 */
import { createHash } from "node:crypto";
import type { AddressInfo } from "node:net";
import { resolve } from "node:path";
import Fastify, { type FastifyInstance } from "fastify";
import { z } from "zod";
import { parseOptions } from "../base/options.js";
import { checkString } from "../base/validate.js";
import { MultiReader, storeNameSchema } from "../api/multi-reader.js";
import { cometRoutes } from "./abci.js";
import { clientErrorHandler, closeIfUnread, frameworkErrorHandler } from "./below-routes.js";
import { DrainingServer } from "./draining-server.js";
import { ApiError, httpError } from "./errors.js";
import { explorerRoutes } from "./explorer.js";
import { Follower } from "./follow.js";
import { createMetrics, metricsPlugin } from "./metrics.js";
import type { Limits } from "./queries.js";
import { v1Routes } from "./routes-v1.js";

/** The most pairs a range page may ask for (`limit`). */
export const MAX_RANGE_LIMIT = 1000;

/** The most versions one `GET /v1/changes` may span (`to − from + 1`). */
export const MAX_CHANGES_SPAN = 1000;

/**
 * The most bytes of request line and headers accepted for keys of at most `maxKeyBytes`: a key is twice its bytes in
 * hex, and a range has two bounds. Room for keys of up to 4× the limit, so that one over it still reaches its route
 * and gets 400 INVALID_ARGUMENT; more gets 431 HEADERS_TOO_LARGE.
 */
function maxHeaderBytesFor(maxKeyBytes: number): number {
  return 8 * maxKeyBytes + 16_384;
}

/** Options of {@link createServer} and {@link startServer}. */
export const serveOptionsSchema = z
  .object({
    /** Address to listen on; default 127.0.0.1 (this machine only). */
    host: z.string().min(1).default("127.0.0.1"),
    /** Port; 0 picks a free one. Default 26680. */
    port: z.number().int().min(0).max(65535).default(26680),
    /** Serve only these stores of a multi-store folder (default: all). */
    stores: z.array(storeNameSchema).min(1).optional(),
    /**
     * How old the known latest version may get before a request looks for a newer one, ms; a request naming a newer
     * height always looks. 0: every request looks. Default 20.
     */
    refreshMs: z.number().int().min(0).max(60_000).default(20),
    /** Longest key or range bound accepted, bytes. Default 64 KiB. */
    maxKeyBytes: z.number().int().min(1).max(1 << 20).default(65_536),
    /** Key and value bytes after which a range page ends early, with `next` set. Default 4 MiB. */
    rangeBytes: z.number().int().min(1).max(256 * 2 ** 20).default(4 * 2 ** 20),
    /**
     * Time to receive a request, and to answer it, ms: headers or a body not received by then get one 408 and the
     * connection is closed; a range page ends early at half of it. Default 10 s.
     */
    requestTimeoutMs: z.number().int().min(100).max(600_000).default(10_000),
  })
  .strict();

/** Options of {@link startServer}. */
export type ServeOptions = z.input<typeof serveOptionsSchema>;

/** A running service. */
export interface Service {
  /** `http://host:port` it listens on. */
  readonly url: string;
  readonly app: FastifyInstance;
  /** Stops accepting, waits for the requests in flight, then closes the store handles. */
  close(): Promise<void>;
}

/**
 * Builds the service over `reader` (not listening yet: `app.inject()` answers requests without a socket). Closing
 * the app closes the reader.
 */
export async function createServer(reader: MultiReader, options?: ServeOptions, nodeSeed = "iavlite"): Promise<FastifyInstance> {
  const o = parseOptions(serveOptionsSchema, options);
  const limits: Limits = {
    maxKeyBytes: o.maxKeyBytes,
    maxRangeLimit: MAX_RANGE_LIMIT,
    rangeBytes: o.rangeBytes,
    rangeMs: o.requestTimeoutMs / 2,
    maxChangesSpan: MAX_CHANGES_SPAN,
  };
  const metrics = createMetrics();
  const maxHeaderBytes = maxHeaderBytesFor(o.maxKeyBytes);
  const app = Fastify({
    logger: false,
    // Time to receive the body and answer, from the headers on: a body not whole by then is a 408 (errorHandler).
    handlerTimeout: o.requestTimeoutMs,
    serverFactory: (handler) => {
      const server = new DrainingServer({
        maxHeaderSize: maxHeaderBytes,
        headersTimeout: o.requestTimeoutMs,
        // Only a backstop: handlerTimeout answers a stalled body first, from the request's own context.
        requestTimeout: 2 * o.requestTimeoutMs,
        // How often Node looks for requests past those times (its default, 30 s, would let them wait that long).
        connectionsCheckingInterval: Math.min(1_000, o.requestTimeoutMs),
      }, handler);
      server.keepAliveTimeout = 72_000;
      return server;
    },
    clientErrorHandler: clientErrorHandler(metrics, maxHeaderBytes, o.requestTimeoutMs),
    frameworkErrors: frameworkErrorHandler(metrics),
    forceCloseConnections: "idle",
    // JSON-RPC bodies: a batch of keys at the limit, no more.
    bodyLimit: 8 * o.maxKeyBytes + 65_536,
    return503OnClosing: true,
  });
  const follower = new Follower(reader, o.refreshMs, (v) => metrics.refreshed(v));
  metrics.refreshed(reader.latest);
  const nodeId = createHash("sha256").update(nodeSeed).digest("hex").slice(0, 40);

  app.setErrorHandler((e, req, reply) => {
    // Time ran out with the body still arriving: a client that stalls, not a fault of the server.
    const stalled = (e as { code?: unknown }).code === "FST_ERR_HANDLER_TIMEOUT" && !req.raw.complete;
    const { status, body } = httpError(stalled ? new ApiError(408, "REQUEST_TIMEOUT", `the request's body did not arrive within ${o.requestTimeoutMs} ms`) : e);
    if (status >= 500) process.stderr.write(`iavlite serve: ${body.error.code}: ${body.error.message}\n`);
    return reply.code(status).send(body);
  });
  // A callback, not an async hook: it runs for every answer, and needs no promise.
  app.addHook("onSend", (req, reply, payload, done) => {
    closeIfUnread(req, reply);
    done(null, payload);
  });
  app.setNotFoundHandler((req, reply) =>
    reply.code(404).send({ error: { code: "NOT_FOUND", message: `no route ${req.method} ${req.url.split("?")[0]!.slice(0, 200)}` } }),
  );
  metricsPlugin(app, metrics);
  await app.register(v1Routes, { prefix: "/v1", follower, limits });
  await app.register(cometRoutes, { follower, limits, nodeId, listen: () => listenAddress(app) });
  await app.register(explorerRoutes);
  app.addHook("onClose", async () => reader.close());
  return app;
}

/** `host:port` the app listens on (IPv6 hosts in brackets). */
function listenAddress(app: FastifyInstance): string {
  const a = app.server.address() as AddressInfo | null;
  if (a === null) return "unbound";
  return a.family === "IPv6" ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`;
}

/**
 * Opens `dir` read-only (a multi-store folder or a plain store folder), and serves it on `host:port`. Throws
 * `NOT_A_STORE` when `dir` holds no store, `INVALID_OPTIONS` on a bad option.
 */
export async function startServer(dir: string, options?: ServeOptions): Promise<Service> {
  checkString(dir, "dir");
  const o = parseOptions(serveOptionsSchema, options);
  const reader = MultiReader.open(dir, o.stores === undefined ? {} : { stores: o.stores });
  let app: FastifyInstance;
  try {
    app = await createServer(reader, o, resolve(dir));
  } catch (e) {
    reader.close();
    throw e;
  }
  try {
    await app.listen({ host: o.host, port: o.port });
  } catch (e) {
    await app.close();
    throw e;
  }
  return { url: `http://${listenAddress(app)}`, app, close: () => app.close() };
}
