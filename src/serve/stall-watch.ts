/**
 * Closes the connections whose client stopped reading: an answer's bytes wait in the socket's buffer (a stream's
 * next chunk, a range page of megabytes) and none of them has gone to the operating system for `stallMs`. Without
 * it such a connection would hold its answer's memory (and a stream its reader) for as long as the client likes.
 *
 * One timer for the whole server sweeps the connections that carry a response; a connection that waits on nothing
 * (a long poll, a handler at work, an idle keep-alive) is never counted as stalled: those have their own times.
 * @module
 */
import type http from "node:http";
import type { Socket } from "node:net";

/** What the sweep knows of one connection with an answer in flight. */
interface Watched {
  /** Bytes the OS took, at the last sweep. */
  sent: number;
  /** When it last took some, or had nothing waiting, ms (performance.now()). */
  since: number;
  /** Responses in flight on it. */
  responses: number;
}

/** Bytes of `s` the operating system took: counted when written, less what still waits in Node's buffers. */
const sentBy = (s: Socket): number => s.bytesWritten - s.writableLength;

/**
 * Watches `server`'s responses; a connection that has bytes waiting and sends none of them for `stallMs` is
 * destroyed. Stops with the server.
 */
export function watchStalls(server: http.Server, stallMs: number): void {
  const watched = new Map<Socket, Watched>();
  server.prependListener("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
    const s = req.socket;
    const w = watched.get(s) ?? { sent: sentBy(s), since: performance.now(), responses: 0 };
    w.responses++;
    watched.set(s, w);
    let counted = true;
    const done = (): void => {
      if (!counted) return;
      counted = false;
      if (--w.responses === 0) watched.delete(s);
    };
    // Not 'finish': a response is finished once its last byte is in Node's buffer, and that last part can stall too.
    // 'close' comes when all of it went to the OS, or when the socket closed (nothing on the socket itself: a
    // keep-alive socket carries many requests).
    res.once("close", done);
  });
  const sweep = (): void => {
    const now = performance.now();
    for (const [s, w] of watched) {
      const sent = sentBy(s);
      if (sent !== w.sent || s.writableLength === 0) {
        w.sent = sent;
        w.since = now;
      } else if (now - w.since >= stallMs) {
        watched.delete(s);
        s.destroy();
      }
    }
  };
  // A stalled connection is closed within stallMs and a fraction of it.
  const timer = setInterval(sweep, Math.max(20, Math.min(1_000, stallMs / 4))).unref();
  server.once("close", () => clearInterval(timer));
}
