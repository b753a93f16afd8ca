/**
 * What a replica reads from the service (a fastify plugin under `/v1`): `GET /v1/ops`, each version's operations in
 * their original order with the hashes they led to (sync/ops-wire.ts), so that a replica replays them exactly and
 * checks every version; and `GET /v1/snapshot`, one kept version as the state-sync stream `iavlite export` writes,
 * to start a replica from. Both stream as the client reads, a chunk made only when the socket has taken the one
 * before, and count among the streams the service caps (stream-slots.ts); a client that stops reading is cut at the
 * stall timeout (stall-watch.ts). A read that fails once the answer has begun cuts the connection without ending the
 * body, so a client never takes a part for the whole.
 * @module
 */
import type { FastifyInstance, FastifyReply } from "fastify";
import { IavlError } from "../base/errors.js";
import { feedVersionParts } from "../sync/ops-wire.js";
import { encodeItems } from "../sync/wire.js";
import { errorSchema, reportedError } from "./errors.js";
import type { Follower } from "./follow.js";
import { toHex } from "./hex.js";
import { paced, pacedStream } from "./paced-stream.js";
import { heightParam, parseHeight, pickStore, querystring, storeParam, waitParam } from "./queries.js";
import type { StreamSlots } from "./stream-slots.js";

/** What the replication routes need. */
export interface ReplicationOptions {
  follower: Follower;
  /** Most versions one `/v1/ops` answer holds. */
  maxSpan: number;
  /** Longest a `/v1/ops` request may wait for its first version, ms. */
  maxWaitMs: number;
  /** The cap on streams open at once. */
  slots: StreamSlots;
}

/** Encoded bytes are gathered into chunks of about this size: a write per chunk, not per item. */
const CHUNK_BYTES = 1 << 16;

/**
 * The handler time of a replica's stream: none to speak of (fastify's longest), since a snapshot of millions of keys
 * lasts as long as its reader takes, in chunks pulled as the socket drains; a client that stops reading is cut at the
 * stall timeout instead (`/v1/changes`, bounded by its span, also keeps the request timeout).
 */
const STREAM_TIMEOUT_MS = 2 ** 31 - 1;

const errors = { "4xx": errorSchema, "5xx": errorSchema } as const;

/** Registers `/ops` and `/snapshot` on `app` (registered by the v1 routes, under their prefix). */
export async function replicationRoutes(app: FastifyInstance, o: ReplicationOptions): Promise<void> {
  const f = o.follower;

  // Binary, streamed: no response schema for the 200.
  app.get<{ Querystring: { store?: string; from: string; to?: string; wait?: string } }>("/ops", {
    handlerTimeout: STREAM_TIMEOUT_MS,
    schema: {
      querystring: querystring({ store: storeParam, from: heightParam, to: heightParam, wait: waitParam(o.maxWaitMs) }, ["from"]),
      response: errors,
    },
  }, async (req, reply) => {
    const q = req.query;
    const store = pickStore(f, q.store);
    const from = parseHeight(q.from, "from")!;
    const asked = parseHeight(q.to, "to");
    if (asked !== undefined && asked < from) throw new IavlError("INVALID_ARGUMENT", `to (${asked}) is before from (${from})`);
    const wait = q.wait === undefined ? 0 : Math.min(Number(q.wait), o.maxWaitMs);
    // A long poll: the version after a replica's last may be a block away.
    const latest = wait > 0 ? await f.waitFor(from, wait) : f.resolve(undefined);
    const to = Math.min(asked ?? latest, latest, from + o.maxSpan - 1);
    reply.header("x-iavlite-latest", String(latest)).type("application/x-iavlite-ops");
    if (to < from) return reply.send(Buffer.alloc(0));
    o.slots.take(reply);
    const reader = f.reader;
    const frames = function* (): Generator<Uint8Array> {
      for (const v of reader.store(store).operations(from, to)) yield* feedVersionParts({ ...v, appHash: reader.appHashAt(v.version) });
    };
    return sendStream(reply, frames());
  });

  app.get<{ Querystring: { store?: string; height?: string } }>("/snapshot", {
    handlerTimeout: STREAM_TIMEOUT_MS,
    schema: {
      querystring: querystring({ store: storeParam, height: heightParam }),
      response: errors,
    },
  }, async (req, reply) => {
    const q = req.query;
    const store = pickStore(f, q.store);
    const version = f.resolve(parseHeight(q.height));
    o.slots.take(reply);
    const [view, appHash] = await paced(() => [f.reader.at(store, version), f.reader.appHashAt(version)] as const);
    reply
      .header("x-iavlite-version", String(version))
      .header("x-iavlite-hash", toHex(view.hash))
      .header("x-iavlite-size", String(view.size))
      .type("application/octet-stream");
    if (appHash !== null) reply.header("x-iavlite-app-hash", toHex(appHash));
    return sendStream(reply, encodeItems(view.export()));
  });
}

/**
 * Sends the bytes `items` makes, a chunk at a time as the client reads (paced-stream.ts). The first chunk is made
 * before the answer begins, so that what fails at once (a pruned version) is a status; a later failure cuts the
 * connection without ending the body.
 */
async function sendStream(reply: FastifyReply, items: Iterator<Uint8Array>): Promise<FastifyReply> {
  // An item of a chunk or more (a version's frame: megabytes on the mixed profile) goes out in chunks that are views
  // of it, not copies; smaller ones are gathered.
  let big: Uint8Array | undefined;
  const next = (): Buffer | null => {
    if (big !== undefined) {
      const view = Buffer.from(big.buffer, big.byteOffset, Math.min(big.length, CHUNK_BYTES));
      big = big.length > CHUNK_BYTES ? big.subarray(CHUNK_BYTES) : undefined;
      return view;
    }
    const parts: Uint8Array[] = [];
    let n = 0;
    while (n < CHUNK_BYTES) {
      const r = items.next();
      if (r.done === true) break;
      if (r.value.length >= CHUNK_BYTES) {
        big = r.value;
        break;
      }
      parts.push(r.value);
      n += r.value.length;
    }
    if (parts.length > 0) return Buffer.concat(parts, n);
    return big === undefined ? null : next();
  };
  const res = reply.raw;
  const stream = pacedStream({
    first: await paced(next),
    next,
    fail(e, s) {
      reportedError(e);
      // No end of the chunked body: the client sees a cut answer, never a short one.
      if (res.socket === null) res.destroy();
      else res.socket.destroy();
      s.destroy();
    },
    stop: () => void items.return?.(undefined),
  });
  return reply.send(stream);
}
