/**
 * The replica's side of a source `iavlite serve`: its status, a version's snapshot, and the operations feed, over
 * HTTP. An error answer becomes the `IavlError` its code names; a source that cannot be reached, or fails by itself
 * (5xx), is `SOURCE_UNAVAILABLE`.
 * @module
 */
import { IavlError, type ErrorCode } from "../base/errors.js";
import { fromHex } from "../base/bytes.js";
import { feedFrames } from "../sync/ops-wire.js";
import type { VersionHashes } from "./local-replica.js";

/** A store of the source, as `/v1/status` lists it. */
export interface SourceStore {
  name: string;
  latest: number;
  earliest: number;
}

/** The source's state, from `/v1/status`. */
export interface SourceStatus {
  /** The newest version every store holds (0: none yet). */
  latest: number;
  /** Its app hash; null for a plain store. */
  appHash: Uint8Array | null;
  stores: SourceStore[];
}

/** An answer of the operations feed: the source's latest version, and the frames of the versions asked for it has. */
export interface SourceFeed {
  latest: number;
  frames: AsyncGenerator<Uint8Array>;
}

/**
 * `url` as the base URL of a source service, or `INVALID_ARGUMENT` at once: anything but an http(s) URL with a host
 * could never answer, and retrying it would only hide the mistake.
 */
export function checkSourceUrl(url: unknown): string {
  if (typeof url !== "string") throw new IavlError("INVALID_ARGUMENT", `the source must be a URL string, got ${typeof url}`);
  let u: URL | undefined;
  try {
    u = new URL(url);
  } catch {
    // Named below.
  }
  if (u === undefined || (u.protocol !== "http:" && u.protocol !== "https:") || u.hostname === "") {
    throw new IavlError("INVALID_ARGUMENT", `${JSON.stringify(url)} is not the http:// or https:// URL of an \`iavlite serve\` (e.g. http://10.0.0.5:26680)`);
  }
  return url;
}

/** A snapshot's hashes and its bytes. */
export interface SourceSnapshot extends VersionHashes {
  body: AsyncIterable<Uint8Array>;
}

/** Codes of a source's error answer that mean the same here. */
const PASSED: ReadonlySet<string> = new Set<ErrorCode>(["VERSION_PRUNED", "VERSION_NOT_FOUND", "VERSION_ROLLED_BACK"]);

/** An `iavlite serve` at `base` (its URL, without `/v1`). */
export class Source {
  private readonly base: string;

  constructor(
    base: string,
    /** Stops every request at once (the replica is closing). */
    private readonly signal?: AbortSignal,
    private readonly timeoutMs = 30_000,
  ) {
    this.base = base.replace(/\/+$/, "");
  }

  /** The source's latest version, app hash and stores. */
  async status(): Promise<SourceStatus> {
    const res = await this.get("v1/status");
    const s = (await res.json()) as { latest: number; appHash: string | null; stores: SourceStore[] };
    return { latest: s.latest, appHash: s.appHash === null ? null : fromHex(s.appHash), stores: s.stores };
  }

  /** The snapshot of `store` at `height`. */
  async snapshot(store: string, height: number): Promise<SourceSnapshot> {
    const res = await this.get(`v1/snapshot?${new URLSearchParams({ store, height: String(height) })}`);
    const header = (name: string): string | null => res.headers.get(name);
    const app = header("x-iavlite-app-hash");
    return {
      hash: fromHex(header("x-iavlite-hash") ?? ""),
      appHash: app === null ? null : fromHex(app),
      body: this.body(res),
    };
  }

  /**
   * The root hash of `store` at `height`, and the app hash there (null for a plain store): what a replica compares
   * its own last version with.
   */
  async hashes(store: string, height: number): Promise<VersionHashes> {
    // Any key will do: the answer names the hashes of the version it was read from.
    const res = await this.get(`v1/query?${new URLSearchParams({ store, key: "00", height: String(height) })}`);
    const q = (await res.json()) as { storeHash: string; appHash: string | null };
    return { hash: fromHex(q.storeHash), appHash: q.appHash === null ? null : fromHex(q.appHash) };
  }

  /**
   * The frames of `store`'s versions from `from` on (sync/ops-wire.ts), at most `limit` of them, waiting up to
   * `waitMs` for the first when it is not committed yet (none when none came in that time), and the source's latest
   * version as it answered.
   */
  async feed(store: string, from: number, limit: number, waitMs: number): Promise<SourceFeed> {
    const q = new URLSearchParams({ store, from: String(from), to: String(from + limit - 1), wait: String(waitMs) });
    const res = await this.get(`v1/ops?${q}`);
    const latest = Number(res.headers.get("x-iavlite-latest") ?? Number.NaN);
    if (!Number.isSafeInteger(latest)) {
      await res.body?.cancel();
      throw new IavlError("SOURCE_UNAVAILABLE", `${this.base} answered the operations feed without its latest version`);
    }
    return { latest, frames: feedFrames(this.body(res)) };
  }

  /** The body of `res`, with a cut or failed read as `SOURCE_UNAVAILABLE`. */
  private async *body(res: Response): AsyncGenerator<Uint8Array> {
    if (res.body === null) return;
    try {
      for await (const chunk of res.body) yield chunk;
    } catch (e) {
      throw new IavlError("SOURCE_UNAVAILABLE", `the answer from ${this.base} was cut`, { cause: e });
    }
  }

  private async get(path: string): Promise<Response> {
    let res: Response;
    try {
      // A stream's time is the reader's to take: only the wait for the headers is bounded.
      const ctl = new AbortController();
      const timer = setTimeout(() => ctl.abort(), this.timeoutMs);
      try {
        res = await fetch(`${this.base}/${path}`, { signal: this.signal === undefined ? ctl.signal : AbortSignal.any([ctl.signal, this.signal]) });
      } finally {
        clearTimeout(timer);
      }
    } catch (e) {
      throw new IavlError("SOURCE_UNAVAILABLE", `${this.base} did not answer: ${(e as Error).message}`, { cause: e });
    }
    if (res.ok) return res;
    const text = await res.text().catch(() => "");
    let code = "";
    let message = text.slice(0, 300);
    try {
      const e = (JSON.parse(text) as { error?: { code?: string; message?: string } }).error;
      code = e?.code ?? "";
      message = e?.message ?? message;
    } catch {
      // Not the service's error shape: the status says enough.
    }
    if (PASSED.has(code)) throw new IavlError(code as ErrorCode, `${this.base}: ${message}`);
    // Any other refusal: this replica asked for what the source does not have (a store of another name).
    if (res.status < 500) throw new IavlError("INVALID_ARGUMENT", `${this.base} refused ${path.split("?")[0]}: ${res.status} ${code} ${message}`);
    throw new IavlError("SOURCE_UNAVAILABLE", `${this.base} answered ${res.status}${code === "" ? "" : ` ${code}`}: ${message}`);
  }
}
