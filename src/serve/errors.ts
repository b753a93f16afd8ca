/**
 * Errors as the HTTP API answers them: `{ "error": { "code", "message" } }` with a status that says whose fault it
 * was. Library errors keep their `IavlError` code; the few that only HTTP has (an unknown store or route, a request
 * that ran out of time, a service shutting down) are {@link ApiError}s, and the errors found below the routes (a URL
 * or request that does not parse, headers too large, a request that does not arrive in time) answer in the same
 * shape. Nothing a client sends gives a 500: only a fault of the store or of this code does.
 * @module
 */
import { fromSqlite, isIavlError, type ErrorCode } from "../base/errors.js";

/** An error only the HTTP API has, with its status. */
export class ApiError extends Error {
  override readonly name = "ApiError";

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The body of every error answer. */
export interface ErrorBody {
  error: { code: string; message: string };
}

/** JSON schema of {@link ErrorBody}, for the routes' response schemas. */
export const errorSchema = {
  type: "object",
  properties: {
    error: { type: "object", properties: { code: { type: "string" }, message: { type: "string" } }, required: ["code", "message"] },
  },
  required: ["error"],
} as const;

const STATUS: Partial<Record<ErrorCode, number>> = {
  INVALID_ARGUMENT: 400,
  EMPTY_KEY: 400,
  INVALID_OPTIONS: 400,
  VERSION_NOT_FOUND: 404,
  VERSION_PRUNED: 410,
  // The version was replaced by a rollback while it was read: gone, as a pruned one is.
  VERSION_ROLLED_BACK: 410,
  CLOSED: 503,
  // Another connection held the file past the wait: try again.
  LOCKED: 503,
};

/** Fastify's own errors that a client causes, by their code. */
const FASTIFY_CLIENT = new Map<string, [number, string]>([
  ["FST_ERR_CTP_INVALID_MEDIA_TYPE", [415, "UNSUPPORTED_MEDIA_TYPE"]],
  ["FST_ERR_CTP_BODY_TOO_LARGE", [413, "BODY_TOO_LARGE"]],
  ["FST_ERR_CTP_INVALID_JSON_BODY", [400, "INVALID_ARGUMENT"]],
  ["FST_ERR_CTP_EMPTY_JSON_BODY", [400, "INVALID_ARGUMENT"]],
  ["FST_ERR_HANDLER_TIMEOUT", [503, "TIMEOUT"]],
  // A bad percent-encoding in the path.
  ["FST_ERR_BAD_URL", [400, "INVALID_ARGUMENT"]],
  // A path parameter over maxParamLength: no file of the explorer has so long a name.
  ["FST_ERR_MAX_PARAM_LENGTH", [404, "NOT_FOUND"]],
]);

function body(code: string, message: string): ErrorBody {
  return { error: { code, message } };
}

/**
 * The answer to an error Node's HTTP parser found before fastify saw a request (its `clientError`): a request line
 * or headers that do not parse or are over `maxHeaderBytes`, or a request not received within `timeoutMs`. All are
 * the client's; `undefined` for a connection the client already reset, which gets no answer.
 */
export function clientError(e: unknown, maxHeaderBytes: number, timeoutMs: number): { status: number; body: ErrorBody } | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  switch (code) {
    case "ECONNRESET":
      return undefined;
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return { status: 408, body: body("REQUEST_TIMEOUT", `the request did not arrive within ${timeoutMs} ms`) };
    case "HPE_HEADER_OVERFLOW":
      return { status: 431, body: body("HEADERS_TOO_LARGE", `the request line and headers are over ${maxHeaderBytes} bytes`) };
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return { status: 413, body: body("BODY_TOO_LARGE", "the body's chunk extensions are too large") };
    default:
      // The parser's code (HPE_INVALID_METHOD, …) names what is wrong; it is one of a fixed set, never client text.
      return { status: 400, body: body("INVALID_ARGUMENT", `malformed HTTP request${typeof code === "string" ? ` (${code})` : ""}`) };
  }
}

/** A failure of a route's schema as the validator reports it; with ajv's `verbose`, also the schema and value that failed. */
interface SchemaFailure {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  parentSchema?: unknown;
  data?: unknown;
}

/** The `description` of a parameter's schema (queries.ts), if it has one. */
function described(schema: unknown): string | undefined {
  const d = (schema as { description?: unknown } | null | undefined)?.description;
  return typeof d === "string" ? d : undefined;
}

/** A value a client sent, quoted and cut short (it may be long). */
function shown(v: unknown): string {
  if (typeof v !== "string") return String(JSON.stringify(v)).slice(0, 40);
  return v.length > 24 ? `"${v.slice(0, 24)}…" (${v.length} characters)` : `"${v}"`;
}

/**
 * fastify's `schemaErrorFormatter`: a request that failed its route's schema, as one plain sentence naming the
 * parameter and what it allows (its schema's `description`), such as `height must be a whole number from 1 to …,
 * got "abc"`, not the validator's `querystring/height must match pattern "^[0-9]{1,16}$"`. fastify marks the error
 * as a validation error, so it answers 400 INVALID_ARGUMENT ({@link httpError}).
 */
export function validationError(errors: readonly SchemaFailure[], dataVar: string): Error {
  const e = errors[0];
  if (e === undefined) return new Error(`the request's ${dataVar} is malformed`);
  if (e.keyword === "required") {
    const name = String(e.params["missingProperty"]);
    const properties = (e.parentSchema as { properties?: Record<string, unknown> } | undefined)?.properties;
    const what = described(properties?.[name]);
    return new Error(`${name} is required${what === undefined ? "" : `: ${what}`}`);
  }
  const name = e.instancePath.slice(1).replaceAll("~1", "/").replaceAll("~0", "~");
  if (name === "") return new Error(`the request's ${dataVar} is malformed`);
  // A query-string parameter given twice arrives as an array.
  if (e.keyword === "type" && Array.isArray(e.data)) return new Error(`${name} was given more than once`);
  const what = described(e.parentSchema);
  return new Error(what === undefined ? `${name} is malformed, got ${shown(e.data)}` : `${name} must be ${what}, got ${shown(e.data)}`);
}

/** The status, code and message that answer `e`. */
export function httpError(failure: unknown): { status: number; body: ErrorBody } {
  const e = fromSqlite(failure, "reading the store");
  if (e instanceof ApiError) return { status: e.status, body: body(e.code, e.message) };
  if (isIavlError(e)) return { status: STATUS[e.code] ?? 500, body: body(e.code, e.message) };
  const f = e as { code?: unknown; statusCode?: unknown; validation?: unknown; message?: unknown };
  const message = typeof f.message === "string" ? f.message : String(e);
  // A request that failed its route's JSON schema.
  if (f.validation !== undefined) return { status: 400, body: body("INVALID_ARGUMENT", message) };
  const known = typeof f.code === "string" ? FASTIFY_CLIENT.get(f.code) : undefined;
  if (known !== undefined) return { status: known[0], body: body(known[1], message) };
  // Any other 4xx fastify found (a malformed URL, say) is the client's.
  if (typeof f.statusCode === "number" && f.statusCode >= 400 && f.statusCode < 500) return { status: f.statusCode, body: body("INVALID_ARGUMENT", message) };
  return { status: 500, body: body("INTERNAL", message) };
}

/**
 * {@link httpError} of `failure`, with a line on stderr when it is the service's fault (a 5xx): what an operator must
 * see. A full house of streams is the client's to wait out, not a fault to log (a line per refusal, under a flood).
 */
export function reportedError(failure: unknown): { status: number; body: ErrorBody } {
  const answer = httpError(failure);
  const { code, message } = answer.body.error;
  if (answer.status >= 500 && code !== "TOO_MANY_STREAMS") process.stderr.write(`iavlite serve: ${code}: ${message}\n`);
  return answer;
}
