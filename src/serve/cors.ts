/**
 * CORS, so that a page of another origin (a browser cosmjs client, a dashboard) can read the service's answers. Off
 * unless origins are configured (`corsOrigins`, `--cors-origin`): then no answer carries a CORS header and a browser
 * lets only pages of the service's own origin (the explorer) read them.
 *
 * An allowed origin gets `Access-Control-Allow-Origin` on every answer, errors included; `"*"` allows any, and is
 * answered as `*`. With a list, the header echoes the request's `Origin` when listed, and every answer says
 * `Vary: Origin` so that no cache hands one origin's answer to another. A preflight (`OPTIONS` with
 * `Access-Control-Request-Method`) from an allowed origin is also told the methods and request headers allowed and how
 * long to remember them. No credentials: the service has no cookies or sessions, so `Allow-Credentials` is never sent.
 * @module
 */
import type { FastifyReply, FastifyRequest } from "fastify";

/** Methods a cross-origin page may use: every route is GET (HEAD) or POST. */
const ALLOW_METHODS = "GET, POST, OPTIONS";

/**
 * Request headers a cross-origin page may send. cosmjs's HttpClient and HttpBatchClient send
 * `Content-Type: application/json` on every POST (not a type a form can send, so browsers preflight it), plus the
 * `headers` of an `HttpEndpoint`, which its documentation gives for "authorization information" (a proxy in front
 * may check it; this service ignores it).
 */
const ALLOW_HEADERS = "content-type, authorization";

/** How long a browser may keep a preflight's answer, seconds (Chromium caps it at 7200). */
const MAX_AGE_S = 7200;

/** Which origins may read the service's answers from a browser. */
export class Cors {
  private readonly any: boolean;
  private readonly origins: ReadonlySet<string>;

  /** `origins`: serialized origins (`https://app.example:8443`) or `"*"`; empty turns CORS off. */
  constructor(origins: readonly string[]) {
    this.any = origins.includes("*");
    this.origins = new Set(origins);
  }

  /** The `Access-Control-Allow-Origin` an answer to `origin` carries, if any. */
  private allowOrigin(origin: string | undefined): string | undefined {
    if (this.any) return "*";
    return origin !== undefined && this.origins.has(origin) ? origin : undefined;
  }

  /** Adds the headers every answer to `req` carries: its allowed origin, and `Vary: Origin` when that depends on it. */
  answer(req: FastifyRequest, reply: FastifyReply): void {
    if (this.origins.size === 0) return;
    if (!this.any) vary(reply, "Origin");
    const allow = this.allowOrigin(req.headers.origin);
    if (allow !== undefined) void reply.header("access-control-allow-origin", allow);
  }

  /**
   * Adds, to the answer of an `OPTIONS` request that is a preflight from an allowed origin, the methods and headers
   * allowed and how long to remember them ({@link answer} adds the origin, as to every answer).
   */
  preflight(req: FastifyRequest, reply: FastifyReply): void {
    if (req.headers["access-control-request-method"] === undefined || this.allowOrigin(req.headers.origin) === undefined) return;
    void reply
      .header("access-control-allow-methods", ALLOW_METHODS)
      .header("access-control-allow-headers", ALLOW_HEADERS)
      .header("access-control-max-age", String(MAX_AGE_S));
  }
}

/** Adds `name` to the answer's `Vary`. */
function vary(reply: FastifyReply, name: string): void {
  const had = reply.getHeader("vary");
  const list = typeof had === "string" && had !== "" ? had.split(",").map((s) => s.trim()) : [];
  if (!list.some((v) => v.toLowerCase() === name.toLowerCase() || v === "*")) void reply.header("vary", [...list, name].join(", "));
}
