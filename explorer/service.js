// @ts-check
/**
 * The explorer's requests to the v1 API, with relative URLs (so that the page works behind a proxy under a prefix),
 * and the shapes of its answers.
 * @module
 */

/** @typedef {{ name: string, latest: number, earliest: number, hash: string | null }} StoreStatus */
/** @typedef {{ latest: number, earliest: number, appHash: string | null, stores: StoreStatus[] }} Status */
/**
 * @typedef {{ height: number, key: string, value: string | null, storeHash: string, appHash: string | null,
 *   proof: { store: string | null, app: string | null }, proofError?: string }} Query
 */
/** @typedef {{ height: number, pairs: Array<{ key: string, value: string }>, next: string | null }} RangePage */
/** @typedef {{ version: number, value: string | null }} HistoryEntry */
/** @typedef {{ key: string, from: number, to: number, entries: HistoryEntry[], next: number | null }} HistoryPage */
/** @typedef {{ version: number, key: string, value: string | null }} Change */

/**
 * GETs `path` and returns its JSON; throws the service's error code and message.
 * @param {string} path
 * @returns {Promise<unknown>}
 */
export async function api(path) {
  const res = await fetch(path, { headers: { accept: "application/json" } });
  if (!res.ok) throw await failure(res);
  return /** @type {unknown} */ (await res.json());
}

/**
 * The error a failed answer carries (`{ "error": { "code", "message" } }`), as an Error.
 * @param {Response} res
 * @returns {Promise<Error>}
 */
async function failure(res) {
  /** @type {unknown} */
  const body = await res.json().catch(() => undefined);
  const e = /** @type {{ error?: { code: string, message: string } } | undefined} */ (body)?.error;
  return new Error(e === undefined ? `HTTP ${res.status}` : `${e.code}: ${e.message}`);
}

/**
 * A query string of the defined `params`.
 * @param {Record<string, string | number | undefined>} params
 * @returns {string}
 */
export function qs(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, String(v));
  return q.toString();
}

/**
 * The changes of `version` of `store` after the first `skip`, at most `max` of them, read line by line from the NDJSON
 * stream (cancelled once one more is seen), and whether there are more.
 * @param {string} store
 * @param {number} version
 * @param {number} skip
 * @param {number} max
 * @returns {Promise<{ changes: Change[], more: boolean }>}
 */
export async function readChanges(store, version, skip, max) {
  const res = await fetch(`v1/changes?${qs({ store, from: version, to: version })}`);
  if (!res.ok || res.body === null) throw await failure(res);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  /** @type {Change[]} */
  const changes = [];
  let seen = 0;
  let rest = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const lines = (rest + value).split("\n");
    rest = lines.pop() ?? "";
    for (const l of lines) {
      const c = /** @type {Change | { error: { code: string, message: string } }} */ (JSON.parse(l));
      if ("error" in c) throw new Error(`${c.error.code}: ${c.error.message}`);
      if (seen++ < skip) continue;
      if (changes.length === max) {
        await reader.cancel();
        return { changes, more: true };
      }
      changes.push(c);
    }
  }
  return { changes, more: false };
}

/**
 * `fn` of each item, at most `width` at a time (so that a page of rows asks the service a bounded number of questions
 * at once), in the items' order.
 * @template T, R
 * @param {T[]} items
 * @param {number} width
 * @param {(item: T) => Promise<R>} fn
 * @returns {Promise<R[]>}
 */
export async function mapBounded(items, width, fn) {
  /** @type {R[]} */
  const out = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(/** @type {T} */ (items[i]));
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
  return out;
}
