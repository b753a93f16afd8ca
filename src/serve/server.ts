/**
 * The query service (`iavlite serve`): a fastify server over a read-only multi-store handle, with the v1 API
 * (routes-v1.ts), the CometBFT RPC (abci.ts), Prometheus metrics (metrics.ts) and the explorer page (explorer.ts),
 * each a plugin of its own, registered on the app http-app.ts builds. It only reads: it never takes the writer lock,
 * never writes and never holds a read transaction open between statements. Requests are answered one at a time on
 * the event loop (better-sqlite3 reads are synchronous), each within the bounds serve-options.ts sets.
 * @module
 */
import { createHash } from "node:crypto";
import { resolve } from "node:path";
import type { FastifyInstance } from "fastify";
import { checkString } from "../base/validate.js";
import { MultiReader } from "../api/multi-reader.js";
import { cometRoutes } from "./abci.js";
import { explorerRoutes } from "./explorer.js";
import { Follower, type FolderSource } from "./follow.js";
import { httpApp, listenAddress } from "./http-app.js";
import { createMetrics, metricsPlugin } from "./metrics.js";
import { v1Routes } from "./routes-v1.js";
import { limitsOf, parseServeOptions, type ServeOptions } from "./serve-options.js";

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
export async function createServer(reader: MultiReader, options?: ServeOptions, nodeSeed = "iavlite", folder?: FolderSource): Promise<FastifyInstance> {
  const o = parseServeOptions(options);
  const limits = limitsOf(o);
  const metrics = createMetrics();
  const app = httpApp(o, metrics);
  const follower = new Follower(reader, o.refreshMs, (v) => metrics.refreshed(v), folder);
  metrics.refreshed(reader.latest);
  const nodeId = createHash("sha256").update(nodeSeed).digest("hex").slice(0, 40);

  metricsPlugin(app, metrics);
  await app.register(v1Routes, { prefix: "/v1", follower, limits, maxWaitMs: o.requestTimeoutMs / 2, maxStreams: o.maxStreams });
  await app.register(cometRoutes, { follower, limits, nodeId, listen: () => listenAddress(app) });
  await app.register(explorerRoutes);
  // Before the requests in flight are drained: a replica's long poll ends now rather than at its time limit.
  app.addHook("preClose", async () => follower.stopWaiting());
  app.addHook("onClose", async () => follower.close());
  return app;
}

/**
 * Opens `dir` read-only (a multi-store folder or a plain store folder), and serves it on `host:port`. Throws
 * `NOT_A_STORE` when `dir` holds no store, `INVALID_OPTIONS` on a bad option.
 */
export async function startServer(dir: string, options?: ServeOptions): Promise<Service> {
  checkString(dir, "dir");
  const o = parseServeOptions(options);
  const open = (): MultiReader => MultiReader.open(dir, o.stores === undefined ? {} : { stores: o.stores });
  const reader = open();
  let app: FastifyInstance;
  try {
    app = await createServer(reader, o, resolve(dir), { dir, open });
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
