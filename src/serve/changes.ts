/**
 * The change stream of `GET /v1/changes`: the net changes of versions [from, to] of a store as NDJSON, one line per
 * change, `{"version":N,"key":hex,"value":hex|null}` (null: removed), made a chunk at a time as the client reads, so
 * memory stays bounded whatever the span holds. What a client can get wrong gets a status before the answer starts;
 * a read that fails after it started ends the stream with an error line and no end of the chunked body.
 * @module
 */
import type { Readable } from "node:stream";
import { IavlError } from "../base/errors.js";
import { reportedError } from "./errors.js";
import type { Follower } from "./follow.js";
import { toHex } from "./hex.js";
import { paced, pacedStream } from "./paced-stream.js";
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
 * Opens the stream of the changes of `store` in versions [`from`, `to`]. Fails before anything is sent:
 * `INVALID_ARGUMENT` when `to` < `from` or the span holds more than `maxSpan` versions, `VERSION_NOT_FOUND` when a
 * version of it was never committed (or is not yet whole in every store), `VERSION_PRUNED` when the changes of one
 * are gone (pruned, or an imported version). When a read fails once the answer has begun, the stream's last chunk is
 * an error line, and `cut` is called once that line went to the response: it must end the connection without ending
 * the body.
 */
export async function changeStream(f: Follower, store: string, from: number, to: number, maxSpan: number, cut: () => void): Promise<Readable> {
  if (to < from) throw new IavlError("INVALID_ARGUMENT", `to (${to}) is before from (${from})`);
  if (to - from + 1 > maxSpan) {
    throw new IavlError("INVALID_ARGUMENT", `from ${from} to ${to} spans ${to - from + 1} versions, more than the ${maxSpan} one request may ask for: ask for from=${from}&to=${from + maxSpan - 1}, then go on from ${from + maxSpan}`);
  }
  const gen = await paced(() => {
    f.resolve(to);
    // One row read per version (≤ maxSpan): a version pruned inside the span (keepEvery keeps some older ones) is a
    // 410 now, not a cut stream later.
    for (let v = from; v <= to; v++) f.reader.at(store, v);
    return chunks(f.reader.store(store).changes(from, to));
  });
  const next = (): string | null => {
    const r = gen.next();
    return r.done === true ? null : r.value;
  };
  // Chunks go out one by one (never joined), so the error line can be told when it leaves.
  return pacedStream({
    // The first chunk too, in a turn of its own: the changes of an imported version are refused on its first read.
    first: await paced(next),
    next,
    fail(e, stream) {
      const last = `${JSON.stringify(reportedError(e).body)}\n`;
      // Nothing is pushed after it; once the pipe wrote it to the response (the pipe's listener runs first), cut.
      stream.on("data", (chunk: unknown) => {
        if (chunk === last) setImmediate(cut);
      });
      stream.push(last);
    },
    stop: () => void gen.return(undefined),
  });
}
