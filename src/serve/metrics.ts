/**
 * `GET /metrics` in Prometheus text format (prom-client), from a registry of this server's own (so that several
 * servers in one process, as in tests, do not share counters): requests by route, method and status, a latency
 * histogram by route, responses that never finished (a client gone, a change stream cut) by route, the latest version
 * served, refreshes, and Node's process metrics.
 * @module
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";

/** The service's meters. */
export interface Metrics {
  readonly registry: Registry;
  /** Records a refresh that found `latest`. */
  refreshed(latest: number): void;
  /** Counts an answer (and its time, when known) under `route`, the route's pattern or "unmatched". */
  answered(route: string, method: string, status: number, seconds?: number): void;
}

/** Creates the registry and its meters. */
export function createMetrics(): Metrics & {
  requests: Counter<"route" | "method" | "status">;
  latency: Histogram<"route">;
  unfinished: Counter<"route">;
} {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: "iavlite_http_requests_total",
    help: "HTTP requests answered, by route, method and status",
    labelNames: ["route", "method", "status"] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: "iavlite_http_request_duration_seconds",
    help: "Time from receiving a request to sending its answer, by route",
    labelNames: ["route"] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  });
  const unfinished = new Counter({
    name: "iavlite_http_responses_unfinished_total",
    help: "Responses whose connection closed before they were whole (a client gone, a change stream cut), by route",
    labelNames: ["route"] as const,
    registers: [registry],
  });
  const latest = new Gauge({ name: "iavlite_latest_version", help: "The newest whole version the service answers from", registers: [registry] });
  const refreshes = new Counter({ name: "iavlite_refreshes_total", help: "Times the service looked for new versions", registers: [registry] });
  return {
    registry,
    requests,
    latency,
    unfinished,
    refreshed(v) {
      refreshes.inc();
      latest.set(v);
    },
    answered(route, method, status, seconds) {
      requests.inc({ route, method, status: String(status) });
      if (seconds !== undefined) latency.observe({ route }, seconds);
    },
  };
}

/** Counts and times every answer, and serves `GET /metrics`. */
export function metricsPlugin(app: FastifyInstance, m: ReturnType<typeof createMetrics>): void {
  // The route's pattern, never the raw URL: unmatched URLs share one label, so clients cannot grow the series.
  const routeOf = (request: FastifyRequest): string => request.routeOptions.url ?? "unmatched";
  app.addHook("onResponse", async (request, reply) => {
    m.answered(routeOf(request), request.method, reply.statusCode, reply.elapsedTime / 1000);
  });
  // onResponse runs only for a response that finished: one cut short is counted here instead.
  app.addHook("onRequest", async (request, reply) => {
    reply.raw.once("close", () => {
      if (!reply.raw.writableFinished) m.unfinished.inc({ route: routeOf(request) });
    });
  });
  app.get("/metrics", async (_request, reply) => {
    const text = await m.registry.metrics();
    return reply.type(m.registry.contentType).send(text);
  });
}
