/**
 * Options of the query service and the bounds they set on every request: keys, range pages, change streams, headers
 * and bodies, and time.
 * @module
 */
import { z } from "zod";
import { parseOptions } from "../base/options.js";
import { MAX_KEY_BYTES } from "../base/validate.js";
import { storeNameSchema } from "../api/multi-options.js";
import type { Limits } from "./queries.js";

/** The most pairs a range page may ask for (`limit`). */
export const MAX_RANGE_LIMIT = 1000;

/** The most versions one `GET /v1/changes` may span (`to − from + 1`). */
export const MAX_CHANGES_SPAN = 1000;

/** The most requests in one JSON-RPC batch (`POST /`). */
export const MAX_BATCH = 100;

/**
 * Bytes of one JSON-RPC request's body besides its key's hex: the longest `abci_query` envelope, as JSON.stringify
 * writes it even indented, is under 300 (a 64-byte store name in `path`, a 16-digit `height`, `prove`, a `0x`
 * prefix, cosmjs's 12-digit id); the rest is room for a longer id, other whitespace, and the batch's brackets and
 * commas.
 */
const REQUEST_ROOM = 1024;

/**
 * An origin a browser page may call from, as `corsOrigins` takes it: `scheme://host[:port]` exactly as browsers send
 * it in `Origin` (lower-case host, no default port, no path or trailing slash), or `*` for any. `null` (what sandboxed
 * and file pages send) is refused: any page can claim it.
 */
export const corsOriginSchema = z
  .string()
  .refine(isOrigin, "an origin is * or scheme://host[:port] as browsers send it: lower-case, no default port, no path or trailing slash");

function isOrigin(s: string): boolean {
  if (s === "*") return true;
  if (!URL.canParse(s)) return false;
  const u = new URL(s);
  return u.username === "" && u.password === "" && u.host !== "" && `${u.protocol}//${u.host}` === s;
}

/** Options of `createServer` and `startServer`. */
export const serveOptionsSchema = z
  .object({
    /** Address to listen on; default 127.0.0.1 (this machine only). */
    host: z.string().min(1).default("127.0.0.1"),
    /** Port; 0 picks a free one. Default 26680. */
    port: z.number().int().min(0).max(65535).default(26680),
    /** Serve only these stores of a multi-store folder (default: all). */
    stores: z.array(storeNameSchema).min(1).optional(),
    /**
     * How old the known latest version may get before a request looks for a newer one, ms; a request naming a newer
     * height always looks. 0: every request looks. Default 20.
     */
    refreshMs: z.number().int().min(0).max(60_000).default(20),
    /** Longest key or range bound accepted, bytes. Default 64 KiB, the longest key a tree takes (`MAX_KEY_BYTES`). */
    maxKeyBytes: z.number().int().min(1).max(1 << 20).default(MAX_KEY_BYTES),
    /** Key and value bytes after which a range page ends early, with `next` set. Default 4 MiB. */
    rangeBytes: z.number().int().min(1).max(256 * 2 ** 20).default(4 * 2 ** 20),
    /**
     * Time to receive a request, and to answer it, ms: headers or a body not received by then get one 408 and the
     * connection is closed; a range page ends early at half of it. Default 10 s.
     */
    requestTimeoutMs: z.number().int().min(100).max(600_000).default(10_000),
    /**
     * Longest an answer may wait on a client that does not read it, ms: a connection whose bytes the client has not
     * taken for this long is closed (a stream, a range page, any answer). Default 30 s.
     */
    stallTimeoutMs: z.number().int().min(100).max(3_600_000).default(30_000),
    /**
     * Most streams (`/v1/ops`, `/v1/snapshot`, `/v1/changes`) open at once; past it a request for one gets 503
     * TOO_MANY_STREAMS with `Retry-After`. Each holds a chunk or two in memory while its client does not read.
     * Default 64.
     */
    maxStreams: z.number().int().min(1).max(10_000).default(64),
    /**
     * Origins whose browser pages may read the answers (CORS), or `["*"]` for any. Default none: no CORS headers,
     * so only pages of the service's own origin (the explorer) can.
     */
    corsOrigins: z.array(corsOriginSchema).default([]),
  })
  .strict();

/** Options of `startServer`. */
export type ServeOptions = z.input<typeof serveOptionsSchema>;

/** Options of the service, with defaults filled in. */
export type ResolvedServeOptions = z.output<typeof serveOptionsSchema>;

/** Checks `options` and fills in the defaults; `INVALID_OPTIONS` names a bad field and its rule. */
export function parseServeOptions(options: ServeOptions | undefined): ResolvedServeOptions {
  return parseOptions(serveOptionsSchema, options);
}

/** The bounds the routes hold each request to. */
export function limitsOf(o: ResolvedServeOptions): Limits {
  return {
    maxKeyBytes: o.maxKeyBytes,
    maxRangeLimit: MAX_RANGE_LIMIT,
    rangeBytes: o.rangeBytes,
    // Half the time to answer: the page ends early with `next`, and still has time to be sent.
    rangeMs: o.requestTimeoutMs / 2,
    maxChangesSpan: MAX_CHANGES_SPAN,
  };
}

/**
 * The most bytes of request line and headers accepted for keys of at most `maxKeyBytes`: a key is twice its bytes in
 * hex, and a range has two bounds. Room for keys of up to 4× the limit, so that one over it still reaches its route
 * and gets 400 INVALID_ARGUMENT; more gets 431 HEADERS_TOO_LARGE.
 */
export function maxHeaderBytesFor(maxKeyBytes: number): number {
  return 8 * maxKeyBytes + 16_384;
}

/**
 * The most bytes of a request body (JSON-RPC on `POST /`): a full batch of `abci_query` requests, each with a key of
 * `maxKeyBytes` (twice that in hex) and {@link REQUEST_ROOM} bytes for the rest of it. 13,209,600 bytes (12.6 MiB)
 * at the default 64 KiB; a body over it gets 413 BODY_TOO_LARGE.
 */
export function bodyLimitFor(maxKeyBytes: number): number {
  return MAX_BATCH * (2 * maxKeyBytes + REQUEST_ROOM);
}
