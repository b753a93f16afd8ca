/**
 * The HTTP server under fastify: Node's own, except that closing lets the answers in flight finish.
 *
 * `server.close()` in Node calls `closeIdleConnections()`, which destroys a connection once its response has ended,
 * even while most of the body still waits in memory to be written (a range page of megabytes to a client that reads
 * slowly): the client gets a truncated answer. Here a connection counts as idle only when every response it carries
 * has been handed to the operating system; once the server is closing, each connection is ended when its last
 * response is, so `close()` returns once every request received before it has been answered in full.
 * @module
 */
import http from "node:http";
import type { Socket } from "node:net";

/** An `http.Server` that drains its connections on close instead of cutting them. */
export class DrainingServer extends http.Server {
  /** Responses not yet handed to the OS, by connection. */
  private readonly busy = new Map<Socket, number>();
  private closing = false;

  constructor(options: http.ServerOptions, handler: http.RequestListener) {
    super(options, handler);
    this.on("connection", (s: Socket) => {
      this.busy.set(s, 0);
      s.once("close", () => this.busy.delete(s));
    });
    // Before the handler, which may end the response at once.
    this.prependListener("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
      const s = req.socket;
      this.busy.set(s, (this.busy.get(s) ?? 0) + 1);
      let counted = true;
      const done = (): void => {
        if (!counted) return;
        counted = false;
        const left = (this.busy.get(s) ?? 1) - 1;
        if (!this.busy.has(s)) return;
        this.busy.set(s, left);
        if (this.closing && left === 0) s.end();
      };
      res.once("finish", done);
      res.once("close", done);
    });
  }

  /** Ends the connections that carry no response (and, from now on, each one as its last response is written). */
  override closeIdleConnections(): void {
    this.closing = true;
    for (const [s, n] of this.busy) if (n === 0) s.destroy();
  }
}
