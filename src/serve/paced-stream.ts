/**
 * The service's streams (`/v1/ops`, `/v1/snapshot`, `/v1/changes`), made a chunk at a time as their clients read, on
 * one budget of event-loop time shared by all of them: every stream's reads (the first chunk's, and what a stream
 * opens before it) run as jobs in turns of a few milliseconds, and each turn comes after the event loop has served
 * what else arrived. A burst of new streams (hundreds of clients connecting at once) then holds a short request, a
 * health check, for a turn at most, where the same work done in the handlers held it for all of them.
 * @module
 */
import { Readable } from "node:stream";
import { reportedError } from "./errors.js";

/** Event-loop time the streams' jobs may take in one turn, ms (a job is not cut: one chunk's reads). */
const TURN_MS = 4;

const jobs: Array<(() => void) | undefined> = [];
let head = 0;
let pending = false;

function schedule(job: () => void): void {
  jobs.push(job);
  if (!pending) {
    pending = true;
    setImmediate(turn);
  }
}

/** Runs jobs in order until a turn's time is spent; the rest wait for the next turn, after the loop's I/O. */
function turn(): void {
  const end = performance.now() + TURN_MS;
  while (head < jobs.length) {
    const job = jobs[head]!;
    jobs[head++] = undefined;
    try {
      job();
    } catch (e) {
      // A job's own failure is its stream's; the queue goes on for the others.
      reportedError(e);
    }
    if (performance.now() >= end) break;
  }
  if (head === jobs.length) {
    jobs.length = 0;
    head = 0;
    pending = false;
    return;
  }
  if (head >= 1024) {
    jobs.splice(0, head);
    head = 0;
  }
  setImmediate(turn);
}

/** What `work` returns (or throws), computed in its turn among the streams' jobs. */
export function paced<T>(work: () => T): Promise<T> {
  return new Promise<T>((resolve, reject) =>
    schedule(() => {
      try {
        resolve(work());
      } catch (e) {
        reject(e);
      }
    }),
  );
}

/** What a paced stream is made of. */
export interface PacedSource<T extends string | Uint8Array> {
  /** The first chunk, made before the answer began (so that what fails at once is a status); null: no chunk at all. */
  first: T | null;
  /** The next chunk, null at the end; made in its turn, once the socket took the one before. */
  next(): T | null;
  /** A failure of `next`, once the answer has begun: the source tells the client its way; no chunk is made after it. */
  fail(e: unknown, stream: Readable): void;
  /** The reads stop: the stream ended early (the client went away, or it was cut). */
  stop(): void;
}

/**
 * A stream of `source`'s chunks, each made once the one before left for the socket: one chunk waits here at most (one
 * more in the socket), so a client that stops reading holds two chunks of memory, not the span; the OS's socket
 * buffers keep the client's work and this service's overlapping.
 */
export function pacedStream<T extends string | Uint8Array>(source: PacedSource<T>): Readable {
  let first: T | null | undefined = source.first;
  let failed = false;
  const stream = new Readable({
    objectMode: true,
    highWaterMark: 1,
    read() {
      schedule(() => {
        if (this.destroyed || failed) return;
        try {
          const chunk = first !== undefined ? first : source.next();
          first = undefined;
          this.push(chunk);
        } catch (e) {
          failed = true;
          source.fail(e, this);
        }
      });
    },
    destroy(err, done) {
      source.stop();
      done(err);
    },
  });
  return stream;
}
