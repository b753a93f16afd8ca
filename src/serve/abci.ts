/**
 * The CometBFT RPC, as much of it as query clients use (a fastify plugin): JSON-RPC 2.0 on `POST /` (one request or a
 * batch) with the methods `abci_query`, `status`, `abci_info` and `health`, and the same methods as CometBFT's URI
 * form (`GET /abci_query?path="/store/bank/key"&data=0x…&height=5&prove=true`, `GET /status`, …). Answers have
 * CometBFT's JSON shapes: 64-bit integers as decimal strings, byte slices as base64, hashes as upper-case hex.
 *
 * `abci_query` answers paths `/store/<name>/key` as the Cosmos SDK's multistore does: the value at the height (an
 * absent key: code 0 and no value), and with `prove` the SDK's two proof ops, `ics23:iavl` (key: the queried key,
 * data: the store-level CommitmentProof) then `ics23:simple` (key: the store name, data: the app-level
 * CommitmentProof). Failures are answered as the SDK answers them, with a response `code`, `codespace` "sdk" and a
 * `log`; a malformed JSON-RPC request gets a JSON-RPC error. CometBFT answers some of those with HTTP 500; here a
 * client's mistake is never a 500 (400 for a body that is not JSON or URI parameters that do not parse).
 *
 * `GET /` is not a method: it is the explorer page (explorer.ts).
 * @module
 */
import { ics23 } from "@confio/ics23";
import type { FastifyInstance, FastifyReply } from "fastify";
import { utf8 } from "../base/bytes.js";
import { IavlError, isIavlError } from "../base/errors.js";
import { ApiError } from "./errors.js";
import type { Follower } from "./follow.js";
import { base64, parseHex, upperHex } from "./hex.js";
import { decimalHeight, queryKey, type Limits } from "./queries.js";
import { MAX_BATCH } from "./serve-options.js";
import { type CommitmentProof } from "../tree/readonly-tree.js";

/** What the CometBFT routes need. */
export interface CometOptions {
  follower: Follower;
  limits: Limits;
  /** A stable id of this node (20 bytes, hex), for `status`. */
  nodeId: string;
  /** Where the service listens, `host:port`, for `status`. */
  listen: () => string;
}

/** The CometBFT version `status` reports: cosmjs picks its 0.38 client for it. */
export const COMET_VERSION = "0.38.17";

/** The id CometBFT gives answers to URI requests. */
const URI_ID = -1;

type Id = string | number | null;

/** A JSON-RPC error (CometBFT's `RPCError`: code, message, data). */
class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data = "",
  ) {
    super(message);
  }
}

const invalidParams = (why: string): RpcError => new RpcError(-32602, "Invalid params", why);

/** The Cosmos SDK's root codespace errors an `abci_query` may answer (types/errors/errors.go). */
const SDK = { txDecode: 2, unknownRequest: 6, invalidRequest: 18, invalidHeight: 26 } as const;

/** A response of `abci_query` that reports a failure, as the SDK's `QueryResult(err)` makes it. */
function failed(code: number, log: string): object {
  return { response: { code, log, info: "", index: "0", key: null, value: null, proofOps: null, height: "0", codespace: "sdk" } };
}

/** The arguments of `abci_query`, decoded. */
interface AbciQuery {
  path: string;
  data: Uint8Array;
  height: number;
  prove: boolean;
}

/** A JSON-RPC method: its argument names in CometBFT's order, and what it does with them. */
interface Method {
  args: readonly string[];
  run(params: Record<string, unknown>, uri: boolean): object;
}

/** Registers the CometBFT routes on `app`. */
export async function cometRoutes(app: FastifyInstance, o: CometOptions): Promise<void> {
  const { follower: f, limits } = o;

  const abciQuery = (q: AbciQuery): object => {
    const m = q.path.match(/^\/store\/([^/]+)\/(.+)$/);
    if (m === null) return failed(SDK.unknownRequest, `unknown query path ${q.path}`);
    const [, store, sub] = m as unknown as [string, string, string];
    if (!f.reader.names.includes(store)) return failed(SDK.unknownRequest, `no such store: ${store}`);
    if (sub !== "key") return failed(SDK.unknownRequest, `unexpected query path: /${sub} (iavlite answers /store/<name>/key)`);
    if (q.data.length === 0) return failed(SDK.txDecode, "query cannot be zero length");
    if (q.data.length > limits.maxKeyBytes) return failed(SDK.invalidRequest, tooLong(q.data.length, limits));
    let a;
    try {
      a = queryKey(f, store, q.data, q.height === 0 ? undefined : q.height, q.prove);
    } catch (e) {
      if (isIavlError(e, "VERSION_NOT_FOUND")) return failed(SDK.invalidHeight, e.message);
      if (isIavlError(e, "VERSION_PRUNED") || isIavlError(e, "VERSION_ROLLED_BACK") || isIavlError(e, "INVALID_ARGUMENT")) {
        return failed(SDK.invalidRequest, e.message);
      }
      throw e;
    }
    if (q.prove && a.storeProof === null) {
      return failed(SDK.invalidRequest, `${a.proofError ?? "no proof"}: ICS23 cannot prove key ${Buffer.from(a.key).toString("hex")} at height ${a.height}`);
    }
    const op = (type: string, key: Uint8Array, p: CommitmentProof): object => ({ type, key: base64(key), data: base64(ics23.CommitmentProof.encode(p).finish()) });
    const ops = !q.prove ? null : [op("ics23:iavl", a.key, a.storeProof!), ...(a.appProof === null ? [] : [op("ics23:simple", utf8(store), a.appProof)])];
    const head = { code: 0, log: "", info: "", index: "0", key: base64(a.key), value: a.value === undefined ? null : base64(a.value) };
    return { response: { ...head, proofOps: ops === null ? null : { ops }, height: String(a.height), codespace: "" } };
  };

  // A plain store folder has no app hash: its root hash is what it commits to.
  const appHash = (v: number): Uint8Array => (v === 0 ? new Uint8Array(0) : (f.reader.appHashAt(v) ?? f.reader.at(f.reader.names[0]!, v).hash));

  const status = (): object => {
    const latest = f.latest();
    const earliest = f.reader.earliest();
    const zeros = "0".repeat(64);
    return {
      node_info: {
        protocol_version: { p2p: "8", block: "11", app: "0" },
        id: o.nodeId,
        listen_addr: `tcp://${o.listen()}`,
        network: "iavlite",
        version: COMET_VERSION,
        channels: "",
        moniker: "iavlite-serve",
        other: { tx_index: "off", rpc_address: `tcp://${o.listen()}` },
      },
      // There are no blocks here: block hashes are zeros, and a version's time is when this service first saw it.
      sync_info: {
        latest_block_hash: zeros,
        latest_app_hash: upperHex(appHash(latest)),
        latest_block_height: String(latest),
        latest_block_time: f.seenAt(latest).toISOString(),
        earliest_block_hash: zeros,
        earliest_app_hash: upperHex(appHash(earliest)),
        earliest_block_height: String(earliest),
        earliest_block_time: new Date(0).toISOString(),
        catching_up: false,
      },
      validator_info: {
        address: o.nodeId.toUpperCase(),
        pub_key: { type: "tendermint/PubKeyEd25519", value: base64(new Uint8Array(32)) },
        voting_power: "0",
      },
    };
  };

  const abciInfo = (): object => {
    const latest = f.latest();
    return { response: { data: "iavlite", version: "", app_version: "0", last_block_height: String(latest), last_block_app_hash: base64(appHash(latest)) } };
  };

  const methods: Record<string, Method> = {
    abci_query: { args: ["path", "data", "height", "prove"], run: (p, uri) => abciQuery(uri ? uriQuery(p, limits) : jsonQuery(p, limits)) },
    status: { args: [], run: status },
    abci_info: { args: [], run: abciInfo },
    health: { args: [], run: () => ({}) },
  };

  /**
   * Answers one JSON-RPC request object; undefined for a notification (a valid request without id), which gets no
   * answer. What is not a valid request (`{"x":1}`) is answered -32600 whether it has an id or not, as JSON-RPC 2.0
   * says.
   */
  const call = (req: unknown): object | undefined => {
    if (typeof req !== "object" || req === null || Array.isArray(req)) return rpcError(null, new RpcError(-32600, "Invalid Request", "a request must be an object"));
    const r = req as { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: unknown };
    const id: Id = typeof r.id === "string" || typeof r.id === "number" ? r.id : null;
    try {
      if (r.jsonrpc !== "2.0") throw new RpcError(-32600, "Invalid Request", `jsonrpc must be "2.0"`);
      if (typeof r.method !== "string") throw new RpcError(-32600, "Invalid Request", "method must be a string");
      if (r.id === undefined || r.id === null) return undefined;
      if (typeof r.id !== "string" && typeof r.id !== "number") throw new RpcError(-32600, "Invalid Request", "id must be a string or a number");
      const method = typeof r.method === "string" ? methods[r.method] : undefined;
      if (method === undefined || !Object.hasOwn(methods, String(r.method))) throw new RpcError(-32601, "Method not found");
      return { jsonrpc: "2.0", id, result: method.run(namedParams(r.params, method.args), false) };
    } catch (e) {
      return rpcError(id, e);
    }
  };

  // Bodies are read as text whatever their content type (curl --data sends a form type) and parsed in the handler,
  // so that a body that is not JSON gets a JSON-RPC parse error.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "string" }, (_req, body, done) => done(null, body));

  app.post("/", async (req, reply) => {
    const text = typeof req.body === "string" ? req.body : "";
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (e) {
      return send(reply, 400, rpcError(null, new RpcError(-32700, "Parse error", `error unmarshaling request: ${(e as Error).message}`)));
    }
    if (!Array.isArray(body)) {
      const answer = call(body);
      return answer === undefined ? reply.code(204).send() : send(reply, 200, answer);
    }
    if (body.length === 0 || body.length > MAX_BATCH) {
      return send(reply, 400, rpcError(null, new RpcError(-32600, "Invalid Request", `a batch holds 1 to ${MAX_BATCH} requests, got ${body.length}`)));
    }
    const answers = body.map(call).filter((a) => a !== undefined);
    return answers.length === 0 ? reply.code(204).send() : send(reply, 200, answers);
  });

  for (const [name, method] of Object.entries(methods)) {
    app.get<{ Querystring: Record<string, string | string[]> }>(`/${name}`, async (req, reply) => {
      try {
        return send(reply, 200, { jsonrpc: "2.0", id: URI_ID, result: method.run(req.query, true) });
      } catch (e) {
        return send(reply, e instanceof RpcError && e.code === -32602 ? 400 : 200, rpcError(URI_ID, e));
      }
    });
  }
}

/** Sends a JSON-RPC answer. */
function send(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).type("application/json").send(JSON.stringify(body));
}

/** The answer to a request that failed with `e`: its JSON-RPC error, or an internal error (CometBFT's -32603). */
function rpcError(id: Id, e: unknown): object {
  let err: RpcError;
  if (e instanceof RpcError) err = e;
  else if (e instanceof ApiError || isIavlError(e)) err = new RpcError(-32603, "Internal error", `${e.code}: ${e.message}`);
  else err = new RpcError(-32603, "Internal error", e instanceof Error ? e.message : String(e));
  return { jsonrpc: "2.0", id, error: { code: err.code, message: err.message, data: err.data } };
}

/** JSON-RPC params by name: an object as it is, an array in the method's argument order. */
function namedParams(params: unknown, args: readonly string[]): Record<string, unknown> {
  if (params === undefined || params === null) return {};
  if (Array.isArray(params)) {
    if (params.length > args.length) throw invalidParams(`params must hold at most ${args.length} values (${args.join(", ")}), got ${params.length}`);
    return Object.fromEntries(params.map((p, i) => [args[i]!, p]));
  }
  if (typeof params === "object") return params as Record<string, unknown>;
  throw invalidParams("params must be an object or an array");
}

/** `abci_query`'s params from JSON: path a string, data hex (CometBFT's HexBytes), height a decimal string or number. */
function jsonQuery(p: Record<string, unknown>, limits: Limits): AbciQuery {
  const path = p["path"] ?? "";
  if (typeof path !== "string") throw invalidParams("path must be a string");
  const data = p["data"] ?? "";
  if (typeof data !== "string") throw invalidParams("data must be a hex string");
  const prove = p["prove"] ?? false;
  if (typeof prove !== "boolean") throw invalidParams("prove must be a boolean");
  return { path, data: hexParam(data, limits), height: heightParam(p["height"]), prove };
}

/**
 * `abci_query`'s params from a URI, as CometBFT reads them: strings may be quoted (`path="/store/bank/key"`), bytes
 * are `0x`-prefixed hex or a quoted string, numbers and booleans bare or quoted.
 */
function uriQuery(p: Record<string, unknown>, limits: Limits): AbciQuery {
  const one = (name: string): string | undefined => {
    const v = p[name];
    if (v === undefined) return undefined;
    if (typeof v !== "string") throw invalidParams(`${name} was given more than once`);
    return v;
  };
  const unquote = (s: string): string => (s.length >= 2 && s.startsWith('"') && s.endsWith('"') ? s.slice(1, -1) : s);
  const rawData = one("data") ?? "";
  const data = rawData.startsWith('"') ? utf8(unquote(rawData)) : hexParam(rawData, limits);
  const prove = unquote(one("prove") ?? "false");
  if (prove !== "true" && prove !== "false") throw invalidParams(`prove must be true or false, got ${prove.slice(0, 20)}`);
  const height = one("height");
  return { path: unquote(one("path") ?? ""), data, height: heightParam(height === undefined ? undefined : unquote(height)), prove: prove === "true" };
}

/** The words that refuse a key (`data`) of `bytes` bytes, more than a key may have. */
function tooLong(bytes: number, limits: Limits): string {
  return `data (the key) is ${bytes} bytes, more than the ${limits.maxKeyBytes} a key may have`;
}

function hexParam(text: string, limits: Limits): Uint8Array {
  // Up to twice the key limit, a longer key is refused by abci_query itself with the SDK's code, not as malformed;
  // past that it is not decoded, but refused in the same words.
  const digits = text.length - (/^0x/i.test(text) ? 2 : 0);
  if (digits > 4 * limits.maxKeyBytes) throw invalidParams(tooLong(Math.ceil(digits / 2), limits));
  try {
    return parseHex(text, "data", 2 * limits.maxKeyBytes);
  } catch (e) {
    if (e instanceof IavlError) throw invalidParams(e.message);
    throw e;
  }
}

/** A height param: a decimal string (CometBFT's int64) or a number; 0 or absent is the latest. */
function heightParam(h: unknown): number {
  if (h === undefined || h === null || h === "") return 0;
  const n = decimalHeight(h);
  if (Number.isNaN(n)) throw invalidParams(`height must be a whole number from 0 to ${Number.MAX_SAFE_INTEGER} (0 for the latest), got ${JSON.stringify(h).slice(0, 24)}`);
  return n;
}
