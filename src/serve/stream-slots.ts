/**
 * The cap on streams open at once (`/v1/ops`, `/v1/snapshot`, `/v1/changes`): each holds a reader and a chunk or two
 * while its client reads, so their number bounds the memory the service may spend on them. Past the cap a request is
 * answered 503 TOO_MANY_STREAMS with `Retry-After`, before any reading.
 * @module
 */
import { finished } from "node:stream";
import type { FastifyReply } from "fastify";
import { ApiError } from "./errors.js";

/** Seconds a refused client is told to wait: streams end as their clients read, or at the stall timeout. */
const RETRY_AFTER_S = 2;

/** Counts the streams in flight, up to `max`. */
export class StreamSlots {
  private open = 0;

  constructor(readonly max: number) {}

  /** Streams in flight. */
  get inUse(): number {
    return this.open;
  }

  /**
   * Takes a slot for the answer `reply` carries, given back when its response closes (sent, cut or abandoned).
   * Throws `TOO_MANY_STREAMS` (503, with `Retry-After` set on `reply`) when all are taken.
   */
  take(reply: FastifyReply): void {
    if (this.open >= this.max) {
      void reply.header("retry-after", String(RETRY_AFTER_S));
      throw new ApiError(503, "TOO_MANY_STREAMS", `${this.max} streams are open, the most this service serves at once; try again in ${RETRY_AFTER_S} s`);
    }
    this.open++;
    // finished() also calls back for an answer whose client went away already (during a long poll before the take),
    // whose "close" has fired: a slot waiting on it would never come back.
    finished(reply.raw, () => this.open--);
  }
}
