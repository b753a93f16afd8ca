/**
 * Errors found below the routes, answered in the API's error shape (errors.ts), counted in /metrics under the route
 * "unmatched" and never logged, for they are the client's: what Node's HTTP parser refuses before fastify sees a
 * request (a request line or headers that do not parse or are too large, headers not received in time), and what
 * fastify's router refuses (a bad percent-encoding, a path parameter too long).
 * @module
 */
import http from "node:http";
import type { Socket } from "node:net";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { clientError, httpError } from "./errors.js";
import type { Metrics } from "./metrics.js";

/** The route label of answers that no route gave (as for unknown URLs). */
const UNMATCHED = "unmatched";

/** Node's internal pointer to the response in flight on a socket, if any. */
type HttpSocket = Socket & { _httpMessage?: http.ServerResponse | null };

/**
 * The listener of Node's `clientError`: one raw HTTP/1.1 answer with `Connection: close`, then the socket is closed.
 * Node reports the error again for every chunk that arrives after it, so each socket is answered once.
 */
export function clientErrorHandler(m: Metrics, maxHeaderBytes: number, timeoutMs: number): (e: Error, socket: Socket) => void {
  const answered = new WeakSet<Socket>();
  return (e, socket) => {
    if (answered.has(socket)) return;
    answered.add(socket);
    const a = clientError(e, maxHeaderBytes, timeoutMs);
    const inFlight = (socket as HttpSocket)._httpMessage;
    // A reset connection, or one whose response has begun: a second answer could only corrupt it, so it is cut.
    if (a === undefined || !socket.writable || (inFlight !== undefined && inFlight !== null && inFlight.headersSent)) {
      socket.destroy();
      return;
    }
    // No request was parsed, so neither its route nor its method is known.
    m.answered(UNMATCHED, "unknown", a.status);
    const json = JSON.stringify(a.body);
    const head = `HTTP/1.1 ${a.status} ${http.STATUS_CODES[a.status] ?? ""}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(json)}\r\nconnection: close\r\n\r\n`;
    // Destroyed once written, not at once: a socket destroyed with the answer still queued could lose it.
    socket.end(head + json, () => socket.destroy());
  };
}

/**
 * fastify's `frameworkErrors`: errors its router finds before a route is chosen. `headers` adds what every answer
 * carries (CORS), since no onSend hook runs for these.
 */
export function frameworkErrorHandler(
  m: Metrics,
  headers: (req: FastifyRequest, reply: FastifyReply) => void,
): (e: FastifyError, req: FastifyRequest, reply: FastifyReply) => void {
  return (e, req, reply) => {
    const { status, body } = httpError(e);
    // fastify's message quotes the whole path, which the client chose and may be long.
    if (body.error.message.length > 200) body.error.message = `${body.error.message.slice(0, 200)}…`;
    // fastify runs no hooks for these requests: they are counted here.
    reply.raw.once("finish", () => m.answered(UNMATCHED, req.method, status));
    closeIfUnread(req, reply);
    headers(req, reply);
    void reply.code(status).send(body);
  };
}

/**
 * Closes the connection after this answer when it goes out before its request's body arrived (a stalled body timed
 * out, a body refused by its length): the rest of the body could only be read as the next request, and Node would
 * answer that one again at its own request timeout.
 */
export function closeIfUnread(req: FastifyRequest, reply: FastifyReply): void {
  // A request without a body is only marked complete after its 'request' event: the headers say there is none.
  const h = req.headers;
  const body = (h["content-length"] !== undefined && h["content-length"] !== "0") || h["transfer-encoding"] !== undefined;
  if (body && !req.raw.complete) void reply.header("connection", "close");
}

/**
 * Answers `CONNECT` as any other method: Node hands it to a `connect` listener with the bare socket, and closes the
 * socket unanswered when there is none. Here it becomes an ordinary request to the app (a 405 on a known path, a 404
 * elsewhere, in the API's error shape), and the connection is closed once the answer is written.
 */
export function answerConnect(server: http.Server): void {
  server.on("connect", (req: http.IncomingMessage, socket: Socket) => {
    const res = new http.ServerResponse(req);
    res.shouldKeepAlive = false;
    res.assignSocket(socket);
    res.once("finish", () => {
      res.detachSocket(socket);
      // Not end(): the socket is no longer read after the hand-off, so a half-open one would wait for the client's end
      // for ever, holding its descriptor.
      socket.destroySoon();
    });
    server.emit("request", req, res);
  });
}
