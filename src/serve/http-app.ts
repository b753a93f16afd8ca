/**
 * The fastify app under the query service, before any route: its HTTP server and bounds, CORS (cors.ts), and how
 * errors, unknown routes, known routes called with another method (405, and `OPTIONS`) and unread bodies are answered,
 * all in the API's error shape.
 * @module
 */
import type { AddressInfo } from "node:net";
import Fastify, { type FastifyInstance } from "fastify";
import { answerConnect, clientErrorHandler, closeIfUnread, frameworkErrorHandler } from "./below-routes.js";
import { Cors } from "./cors.js";
import { DrainingServer } from "./draining-server.js";
import { ApiError, reportedError, validationError } from "./errors.js";
import type { Metrics } from "./metrics.js";
import { RouteMethods } from "./route-methods.js";
import { watchStalls } from "./stall-watch.js";
import { bodyLimitFor, MAX_BATCH, maxHeaderBytesFor, type ResolvedServeOptions } from "./serve-options.js";

/** A fastify app with no route yet, bounded by `o`, counting what is answered below the routes in `metrics`. */
export function httpApp(o: ResolvedServeOptions, metrics: Metrics): FastifyInstance {
  const maxHeaderBytes = maxHeaderBytesFor(o.maxKeyBytes);
  const bodyLimit = bodyLimitFor(o.maxKeyBytes);
  const cors = new Cors(o.corsOrigins);
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
      watchStalls(server, o.stallTimeoutMs);
      answerConnect(server);
      return server;
    },
    clientErrorHandler: clientErrorHandler(metrics, maxHeaderBytes, o.requestTimeoutMs),
    frameworkErrors: frameworkErrorHandler(metrics, (req, reply) => cors.answer(req, reply)),
    forceCloseConnections: "idle",
    bodyLimit,
    return503OnClosing: true,
    // A request that fails its route's schema is answered in words (errors.ts), from the schema and value that failed.
    ajv: { customOptions: { verbose: true } },
    schemaErrorFormatter: validationError,
  });
  app.setErrorHandler((e, req, reply) => {
    // Time ran out with the body still arriving: a client that stalls, not a fault of the server.
    const code = (e as { code?: unknown }).code;
    const stalled = code === "FST_ERR_HANDLER_TIMEOUT" && !req.raw.complete;
    const { status, body } = reportedError(
      stalled ? new ApiError(408, "REQUEST_TIMEOUT", `the request's body did not arrive within ${o.requestTimeoutMs} ms`)
      : code === "FST_ERR_CTP_BODY_TOO_LARGE" ? tooLarge(bodyLimit, o.maxKeyBytes)
      : e,
    );
    return reply.code(status).send(body);
  });
  // Every route, as registered (plugins inherit the hook): what 405 and OPTIONS answer from.
  const routes = new RouteMethods();
  app.addHook("onRoute", (r) => {
    routes.add(r.method, r.url);
    describedParams(r.url, r.schema?.querystring);
  });
  // Before the body is read: a known path under another method is a 405 whatever its body, and OPTIONS (a CORS
  // preflight) is 204 with `Allow`; an unknown path goes on to the not-found handler. Callbacks, not async hooks:
  // they run for every request or answer, and need no promise.
  app.addHook("onRequest", (req, reply, done) => {
    if (!req.is404) return done();
    const path = req.url.split("?")[0]!;
    const allow = routes.allowed(path);
    if (allow === undefined) return done();
    void reply.header("allow", allow.join(", "));
    if (req.method !== "OPTIONS") return done(new ApiError(405, "METHOD_NOT_ALLOWED", `${req.method} is not allowed on ${path.slice(0, 200)}; it takes ${allow.join(", ")}`));
    cors.preflight(req, reply);
    void reply.code(204).send();
  });
  app.addHook("onSend", (req, reply, payload, done) => {
    cors.answer(req, reply);
    closeIfUnread(req, reply);
    done(null, payload);
  });
  app.setNotFoundHandler((req, reply) =>
    reply.code(404).send({ error: { code: "NOT_FOUND", message: `no route ${req.method} ${req.url.split("?")[0]!.slice(0, 200)}` } }),
  );
  return app;
}

/**
 * Refuses a route whose query-string parameters do not all say in words what they allow (queries.ts): a request
 * failing its check is answered with those words, and without them the answer would not say what to send.
 */
function describedParams(url: string, schema: unknown): void {
  const properties = (schema as { properties?: Record<string, { description?: unknown }> } | undefined)?.properties ?? {};
  for (const [name, p] of Object.entries(properties)) {
    if (typeof p.description !== "string") throw new Error(`route ${url}: query parameter ${name} has no description`);
  }
}

/** The answer to a body over `limit`: the bound, and what it makes room for. */
function tooLarge(limit: number, maxKeyBytes: number): ApiError {
  return new ApiError(
    413,
    "BODY_TOO_LARGE",
    `the body is over ${limit} bytes, the most this service reads: room for a JSON-RPC batch of ${MAX_BATCH} abci_query requests with keys of ${maxKeyBytes} bytes`,
  );
}

/** `host:port` the app listens on (IPv6 hosts in brackets); "unbound" before it listens. */
export function listenAddress(app: FastifyInstance): string {
  const a = app.server.address() as AddressInfo | null;
  if (a === null) return "unbound";
  return a.family === "IPv6" ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`;
}
