/**
 * The change stream of `GET /v1/changes`: the net changes of versions [from, to] of a store as NDJSON, one line per
 * change, `{"version":N,"key":hex,"value":hex|null}` (null: removed), made a chunk at a time as the client reads, so
 * memory stays bounded whatever the span holds. What a client can get wrong gets a status before the answer starts;
 * a read that fails after it started ends the stream with an error line and no end of the chunked body.
 * @module
 */
import { Readable } from "node:stream";
import { IavlError } from "../base/errors.js";
import { httpError } from "./errors.js";
import type { Follower } from "./follow.js";
import { toHex } from "./hex.js";
import type { VersionChange } from "../tree/store-contract.js";

/** Lines are gathered into chunks of about this many characters: a write per chunk, not per change. */
const CHUNK_CHARS = 16_384;

/** The NDJSON line of one change (hex needs no JSON escaping). */
function line(c: VersionChange): string {
  const value = c.value === null ? "null" : `"${toHex(c.value)}"`;
  return `{"version":${c.version},"key":"${toHex(c.key)}","value":${value}}\n`;
}

/** The lines of `changes`, gathered into chunks; on a failure, the lines gathered so far come out before it. */
function* chunks(changes: Iterable<VersionChange>): Generator<string, void, undefined> {
  let chunk = "";
  try {
    for (const c of changes) {
      chunk += line(c);
      if (chunk.length >= CHUNK_CHARS) {
        yield chunk;
        chunk = "";
      }
    }
  } catch (e) {
    if (chunk !== "") yield chunk;
    throw e;
  }
  if (chunk !== "") yield chunk;
}

/**
 * Opens the stream of the changes of `store` in versions [`from`, `to`]. Throws before anything is sent:
 * `INVALID_ARGUMENT` when `to` < `from` or the span holds more than `maxSpan` versions, `VERSION_NOT_FOUND` when a
 * version of it was never committed (or is not yet whole in every store), `VERSION_PRUNED` when the changes of one
 * are gone (pruned, or an imported version). When a read fails once the answer has begun, the stream's last chunk is
 * an error line, and `cut` is called once that line went to the response: it must end the connection without ending
 * the body.
 */
export function changeStream(f: Follower, store: string, from: number, to: number, maxSpan: number, cut: () => void): Readable {
  if (to < from) throw new IavlError("INVALID_ARGUMENT", `to (${to}) is before from (${from})`);
  if (to - from + 1 > maxSpan) {
    throw new IavlError("INVALID_ARGUMENT", `from ${from} to ${to} spans ${to - from + 1} versions, more than the ${maxSpan} one request may ask for: ask for from=${from}&to=${from + maxSpan - 1}, then go on from ${from + maxSpan}`);
  }
  f.resolve(to);
  // One row read per version (≤ maxSpan): a version pruned inside the span (keepEvery keeps some older ones) is a 410
  // now, not a cut stream later.
  for (let v = from; v <= to; v++) f.reader.at(store, v);
  const gen = chunks(f.reader.store(store).changes(from, to));
  // The first chunk too: the changes of an imported version are refused on its first read.
  let first: IteratorResult<string, void> | undefined = gen.next();
  let failed = false;
  // Object mode with a high-water mark of one chunk: at most a chunk or two wait here for the socket, and chunks go
  // out one by one (never joined), so the error line can be told when it leaves.
  const stream = new Readable({
    objectMode: true,
    highWaterMark: 1,
    read() {
      // A chunk per turn of the event loop, as replication.ts makes its chunks: a new stream fills the OS's socket
      // buffers before its client's stop can be seen, and made at once that would keep every other request waiting.
      setImmediate(() => {
        if (!this.destroyed) make();
      });
    },
    destroy(err, done) {
      // The client went away, or the stream was cut: the generator's reads stop here.
      gen.return(undefined);
      done(err);
    },
  });
  return stream;

  function make(): void {
    // After the error line, nothing: neither more lines nor the end of the body.
    if (failed) return;
    try {
      const r = first ?? gen.next();
      first = undefined;
      stream.push(r.done === true ? null : r.value);
    } catch (e) {
      const { status, body } = httpError(e);
      if (status >= 500) process.stderr.write(`iavlite serve: ${body.error.code}: ${body.error.message}\n`);
      const last = `${JSON.stringify(body)}\n`;
      failed = true;
      // Nothing is pushed after it; once the pipe wrote it to the response (the pipe's listener runs first), cut.
      stream.on("data", (chunk: unknown) => {
        if (chunk === last) setImmediate(cut);
      });
      stream.push(last);
    }
  }
}
