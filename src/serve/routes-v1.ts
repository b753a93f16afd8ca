/**
 * The v1 HTTP API (a fastify plugin under `/v1`): `GET /v1/status`, `GET /v1/query`, `GET /v1/range`,
 * `GET /v1/history`, and the NDJSON
 * stream `GET /v1/changes` (changes.ts). Bytes are lowercase hex without `0x`; each route's JSON schema validates its
 * query string (its parameters' schemas, in queries.ts, say in words what each allows, and a request that fails is
 * answered in those words) and serializes its answer, except the pages of `/range` and `/history`, written as bytes
 * (json-bytes.ts).
 * Errors answer `{ "error": { "code", "message" } }` (errors.ts).
 * @module
 */
import { ics23 } from "@confio/ics23";
import type { FastifyInstance } from "fastify";
import { changeStream } from "./changes.js";
import { errorSchema } from "./errors.js";
import type { Follower } from "./follow.js";
import { hexOrNull, parseHex, toHex } from "./hex.js";
import { jsonBytes, type JsonPiece } from "./json-bytes.js";
import { boolParam, boundParam, heightParam, keyParam, limitParam, parseHeight, pickStore, queryHistory, queryKey, queryRange, querystring, storeParam, type KeyAnswer, type Limits, type RangePage } from "./queries.js";
import { replicationRoutes } from "./replication.js";
import { StreamSlots } from "./stream-slots.js";
import type { KeyHistory } from "../tree/store-contract.js";
import { type CommitmentProof } from "../tree/readonly-tree.js";

/** What the v1 routes need. */
export interface V1Options {
  follower: Follower;
  limits: Limits;
  /** Longest a replica's `/v1/ops` request may wait for a version, ms. */
  maxWaitMs: number;
  /** The cap on streams open at once (`/ops`, `/snapshot`, `/changes`). */
  maxStreams: number;
}

const hex = { type: "string" } as const;
const hexOrNullSchema = { type: ["string", "null"] } as const;
const errors = { "4xx": errorSchema, "5xx": errorSchema } as const;

/** A page's size from the query string (checked against the service's limits later); 100 when absent. */
const pageLimit = (text: string | undefined): number => (text === undefined ? 100 : Number(text));


/** The JSON body of a `/v1/query` answer (also the node:http floor's in bench/serve-child.ts, so both send the same). */
export function queryBody(a: KeyAnswer): Record<string, unknown> {
  return {
    height: a.height,
    key: toHex(a.key),
    value: hexOrNull(a.value),
    storeHash: toHex(a.storeHash),
    appHash: hexOrNull(a.appHash),
    proof: { store: proofHex(a.storeProof), app: proofHex(a.appProof) },
    ...(a.proofError === undefined ? {} : { proofError: a.proofError }),
  };
}

const JSON_TYPE = "application/json; charset=utf-8";

/** The JSON of a `/v1/history` answer (its 200 schema), written directly: the schema's serializer scans every string. */
function historyJson(key: Uint8Array, page: KeyHistory): Buffer {
  const pieces: JsonPiece[] = ['{"key":', key, `,"from":${page.from},"to":${page.to},"entries":[`];
  page.entries.forEach((e, i) => pieces.push(`${i === 0 ? "" : ","}{"version":${e.version},"value":`, e.value, "}"));
  pieces.push(`],"next":${page.next ?? "null"}}`);
  return jsonBytes(pieces);
}

/** The JSON of a `/v1/range` answer (its 200 schema), written directly as {@link historyJson} is. */
function rangeJson(page: RangePage): Buffer {
  const pieces: JsonPiece[] = [`{"height":${page.height},"pairs":[`];
  page.pairs.forEach(([k, v], i) => pieces.push(i === 0 ? '{"key":' : ',{"key":', k, ',"value":', v, "}"));
  pieces.push('],"next":', page.next ?? null, "}");
  return jsonBytes(pieces);
}

/** Encodings of proofs that are asked for again: the reader keeps and shares the app-level proofs of recent versions. */
const encoded = new WeakMap<CommitmentProof, string>();

/** Protobuf bytes of a proof, hex. */
function proofHex(p: CommitmentProof | null): string | null {
  if (p === null) return null;
  let hex = encoded.get(p);
  if (hex === undefined) encoded.set(p, (hex = toHex(ics23.CommitmentProof.encode(p).finish())));
  return hex;
}

/** Registers the v1 routes on `app` (registered with prefix `/v1`). */
export async function v1Routes(app: FastifyInstance, o: V1Options): Promise<void> {
  const { follower: f, limits } = o;
  const slots = new StreamSlots(o.maxStreams);
  await app.register(replicationRoutes, { follower: f, maxSpan: limits.maxChangesSpan, maxWaitMs: o.maxWaitMs, slots });
  const keySchema = keyParam(limits.maxKeyBytes);
  const boundSchema = boundParam(limits.maxKeyBytes);
  const limitSchema = limitParam(limits.maxRangeLimit);

  app.get("/status", {
    schema: {
      response: {
        200: {
          type: "object",
          properties: {
            latest: { type: "integer" },
            earliest: { type: "integer" },
            appHash: hexOrNullSchema,
            stores: {
              type: "array",
              items: {
                type: "object",
                properties: { name: { type: "string" }, latest: { type: "integer" }, earliest: { type: "integer" }, hash: hexOrNullSchema },
                required: ["name", "latest", "earliest", "hash"],
              },
            },
          },
          required: ["latest", "earliest", "appHash", "stores"],
        },
        ...errors,
      },
    },
  }, async () => {
    const latest = f.latest();
    const r = f.reader;
    // Each store's own range; `hash` is its root hash at the version every store holds (so the app hash covers them).
    const stores = r.names.map((name) => {
      const s = r.store(name);
      return { name, latest: s.version, earliest: s.earliest(), hash: latest === 0 ? null : toHex(r.at(name, latest).hash) };
    });
    return { latest, earliest: r.earliest(), appHash: latest === 0 ? null : hexOrNull(r.appHashAt(latest)), stores };
  });

  app.get<{ Querystring: { store?: string; key: string; height?: string; prove?: string } }>("/query", {
    schema: {
      querystring: querystring({ store: storeParam, key: keySchema, height: heightParam, prove: boolParam }, ["key"]),
      response: {
        200: {
          type: "object",
          properties: {
            height: { type: "integer" },
            key: hex,
            value: hexOrNullSchema,
            storeHash: hex,
            appHash: hexOrNullSchema,
            proof: { type: "object", properties: { store: hexOrNullSchema, app: hexOrNullSchema }, required: ["store", "app"] },
            proofError: { type: "string" },
          },
          required: ["height", "key", "value", "storeHash", "appHash", "proof"],
        },
        ...errors,
      },
    },
  }, async (req, reply) => {
    const q = req.query;
    const store = pickStore(f, q.store);
    const key = parseHex(q.key, "key", limits.maxKeyBytes);
    return queryBody(queryKey(f, store, key, parseHeight(q.height), q.prove === "true"));
  });

  app.get<{ Querystring: { store?: string; start?: string; end?: string; height?: string; limit?: string; reverse?: string } }>("/range", {
    schema: {
      querystring: querystring({ store: storeParam, start: boundSchema, end: boundSchema, height: heightParam, limit: limitSchema, reverse: boolParam }),
      response: {
        200: {
          type: "object",
          properties: {
            height: { type: "integer" },
            pairs: { type: "array", items: { type: "object", properties: { key: hex, value: hex }, required: ["key", "value"] } },
            next: hexOrNullSchema,
          },
          required: ["height", "pairs", "next"],
        },
        ...errors,
      },
    },
  }, async (req, reply) => {
    const q = req.query;
    const store = pickStore(f, q.store);
    const bound = (text: string | undefined, what: string): Uint8Array | undefined =>
      // An empty bound is no bound (an empty key cannot exist).
      text === undefined || text === "" ? undefined : parseHex(text, what, limits.maxKeyBytes);
    const page = queryRange(f, store, {
      start: bound(q.start, "start"),
      end: bound(q.end, "end"),
      height: parseHeight(q.height),
      limit: pageLimit(q.limit),
      reverse: q.reverse === "true",
    }, limits);
    return reply.type(JSON_TYPE).send(rangeJson(page));
  });

  // Paged like /range: `next` is the `to` of the next page (its `from` when reversing); each entry proves with /query.
  app.get<{ Querystring: { store?: string; key: string; from?: string; to?: string; limit?: string; reverse?: string } }>("/history", {
    schema: {
      querystring: querystring({ store: storeParam, key: keySchema, from: heightParam, to: heightParam, limit: limitSchema, reverse: boolParam }, ["key"]),
      response: {
        200: {
          type: "object",
          properties: {
            key: hex,
            from: { type: "integer" },
            to: { type: "integer" },
            entries: { type: "array", items: { type: "object", properties: { version: { type: "integer" }, value: hexOrNullSchema }, required: ["version", "value"] } },
            next: { type: ["integer", "null"] },
          },
          required: ["key", "from", "to", "entries", "next"],
        },
        ...errors,
      },
    },
  }, async (req, reply) => {
    const q = req.query;
    const store = pickStore(f, q.store);
    const key = parseHex(q.key, "key", limits.maxKeyBytes);
    const page = queryHistory(f, store, {
      key,
      from: parseHeight(q.from, "from"),
      to: parseHeight(q.to, "to"),
      limit: pageLimit(q.limit),
      reverse: q.reverse === "true",
    }, limits);
    return reply.type(JSON_TYPE).send(historyJson(key, page));
  });

  // NDJSON, streamed as the client reads; no response schema for the 200 (it is not one JSON value).
  app.get<{ Querystring: { store?: string; from: string; to: string } }>("/changes", {
    schema: {
      querystring: querystring({ store: storeParam, from: heightParam, to: heightParam }, ["from", "to"]),
      response: errors,
    },
  }, async (req, reply) => {
    const q = req.query;
    const store = pickStore(f, q.store);
    const res = reply.raw;
    // A failure after the answer began: end the connection without the chunked body's end, so no client takes what
    // came for the whole answer. end() first sends what was written (the error line last).
    const cut = (): void => void (res.socket === null ? res.destroy() : res.socket.end());
    // Before the reads begin (a refused request opens none); the slot is given back when the answer closes, whatever it is.
    slots.take(reply);
    const stream = await changeStream(f, store, parseHeight(q.from, "from")!, parseHeight(q.to, "to")!, limits.maxChangesSpan, cut);
    return reply.type("application/x-ndjson").send(stream);
  });
}
