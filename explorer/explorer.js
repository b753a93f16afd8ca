// @ts-check
/**
 * The explorer page of `iavlite serve`, in the browser: the stores and their versions (/v1/status), a key looked up
 * with its proofs (/v1/query?prove=true) and the proofs checked here by `iavlite/verify`, keys in order a page at a
 * time (/v1/range), and the changes of a version (/v1/changes). Plain JavaScript, checked by tsc (explorer/
 * tsconfig.json): the server sends it as it is, and the page's import map points `iavlite/verify` and
 * `@noble/hashes/` at the modules the server sends beside it.
 * @module
 */
import { verifyMembership, verifyNonMembership, verifyStoreInApp } from "iavlite/verify";

/** @typedef {{ name: string, latest: number, earliest: number, hash: string | null }} StoreStatus */
/** @typedef {{ latest: number, earliest: number, appHash: string | null, stores: StoreStatus[] }} Status */
/**
 * @typedef {{ height: number, key: string, value: string | null, storeHash: string, appHash: string | null,
 *   proof: { store: string | null, app: string | null }, proofError?: string }} Query
 */
/** @typedef {{ height: number, pairs: Array<{ key: string, value: string }>, next: string | null }} RangePage */
/** @typedef {{ version: number, key: string, value: string | null }} Change */

/** At most this many changes of a version are shown (the stream is cancelled after them). */
const MAX_CHANGES_SHOWN = 1000;

// ---- the page's elements --------------------------------------------------------------------------------------------

/**
 * The element with `id`, of `type`; throws when the page lacks it (a page and script out of step).
 * @template {HTMLElement} T
 * @param {string} id
 * @param {{ new (): T, name: string }} type
 * @returns {T}
 */
function byId(id, type) {
  const e = document.getElementById(id);
  if (!(e instanceof type)) throw new Error(`the page has no ${type.name} #${id}`);
  return e;
}

const storePick = byId("store", HTMLSelectElement);

/**
 * Shows `message` in the error line `id` (hidden when undefined).
 * @param {string} id
 * @param {string | undefined} message
 */
function showError(id, message) {
  const p = byId(id, HTMLParagraphElement);
  p.hidden = message === undefined;
  p.textContent = message ?? "";
}

/**
 * A new element with text and a class.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {string} text
 * @param {string} [className]
 * @returns {HTMLElementTagNameMap[K]}
 */
function make(tag, text, className) {
  const e = document.createElement(tag);
  e.textContent = text;
  if (className !== undefined) e.className = className;
  return e;
}

// ---- bytes ----------------------------------------------------------------------------------------------------------

/**
 * Bytes of hex `text`; throws on anything but an even number of hex digits.
 * @param {string} text
 * @returns {Uint8Array}
 */
function fromHex(text) {
  if (text.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(text)) throw new Error(`not hex: "${text.slice(0, 24)}"`);
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/**
 * Lowercase hex of `bytes`.
 * @param {Uint8Array} bytes
 * @returns {string}
 */
function toHex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });
// C0 controls but tab and newlines, DEL and C1 controls: bytes that would not read as text.
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;

/**
 * The text of hex bytes when they are printable UTF-8, else undefined.
 * @param {string} hex
 * @returns {string | undefined}
 */
function asText(hex) {
  try {
    const s = strictUtf8.decode(fromHex(hex));
    return CONTROL.test(s) ? undefined : s;
  } catch {
    return undefined;
  }
}

/**
 * An element showing hex bytes: as text when printable (the hex in its title), else as hex with `0x` (as
 * `iavlite get` shows bytes), shortened past `max` characters.
 * @param {string} hex
 * @param {number} [max]
 * @returns {HTMLElement}
 */
function bytesView(hex, max = 96) {
  if (hex === "") return make("span", "(empty)", "muted");
  const text = asText(hex);
  const shown = text ?? `0x${hex}`;
  const span = make("span", shown.length > max ? `${shown.slice(0, max)}…` : shown, text === undefined ? "hex" : "text");
  span.title = text === undefined ? `${hex.length / 2} bytes` : `hex ${hex}`;
  return span;
}

/**
 * The hex of a key typed in a form: as typed when hex, or its UTF-8 when `text`.
 * @param {string} typed
 * @param {boolean} text
 * @returns {string}
 */
function keyHex(typed, text) {
  if (text) return toHex(new TextEncoder().encode(typed));
  const h = typed.trim().replace(/^0x/i, "");
  fromHex(h);
  return h.toLowerCase();
}

/**
 * A height typed in a form: undefined when empty (the latest); throws when it is not a positive integer.
 * @param {string} typed
 * @returns {number | undefined}
 */
function heightOf(typed) {
  const t = typed.trim();
  if (t === "") return undefined;
  if (!/^[0-9]+$/.test(t) || Number(t) < 1) throw new Error(`a height is a positive integer, not "${t}"`);
  return Number(t);
}

// ---- the service ----------------------------------------------------------------------------------------------------

/**
 * GETs `path` (relative to the page, so it works behind a proxy under a prefix) and returns its JSON; throws the
 * service's error code and message.
 * @param {string} path
 * @returns {Promise<unknown>}
 */
async function api(path) {
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
function qs(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, String(v));
  return q.toString();
}

/** The last status, for the forms' defaults. */
let status = /** @type {Status | undefined} */ (undefined);

/** Loads /v1/status into the summary, the facts and the stores table. */
async function loadStatus() {
  try {
    const s = /** @type {Status} */ (await api("v1/status"));
    status = s;
    showError("page-error", undefined);
    byId("summary", HTMLParagraphElement).textContent =
      `${s.stores.length} store${s.stores.length === 1 ? "" : "s"} · versions ${s.earliest}–${s.latest}`;
    byId("latest", HTMLElement).textContent = String(s.latest);
    byId("earliest", HTMLElement).textContent = String(s.earliest);
    byId("app-hash", HTMLElement).textContent = s.appHash ?? "none (a plain store folder has no app hash)";
    const body = byId("stores", HTMLTableElement).tBodies[0];
    if (body === undefined) throw new Error("the stores table has no body");
    body.replaceChildren(
      ...s.stores.map((st) => {
        const tr = document.createElement("tr");
        tr.dataset["store"] = st.name;
        tr.append(make("td", st.name, "name"), make("td", String(st.earliest)), make("td", String(st.latest)), make("td", st.hash ?? "–", "hash"));
        // A row picks its store for the forms.
        tr.addEventListener("click", () => (storePick.value = st.name));
        return tr;
      }),
    );
    const picked = storePick.value;
    storePick.replaceChildren(...s.stores.map((st) => new Option(st.name, st.name)));
    if (s.stores.some((st) => st.name === picked)) storePick.value = picked;
    document.body.dataset["ready"] = "true";
  } catch (e) {
    showError("page-error", `status: ${String(e instanceof Error ? e.message : e)}`);
  }
}

// ---- looking up a key -----------------------------------------------------------------------------------------------

/**
 * Whether the answer's proofs verify here: the key's value (or its absence) under the store hash, and on a
 * multi-store folder the store hash under the app hash. Each step's outcome is told.
 * @param {Query} q
 * @param {string} store
 * @returns {{ ok: boolean, steps: string[] }}
 */
function verifyAnswer(q, store) {
  /** @type {string[]} */
  const steps = [];
  const mark = (/** @type {boolean} */ ok) => (ok ? "✓" : "✗");
  if (q.proof.store === null) {
    steps.push(`✗ no proof of the key: ${q.proofError ?? "the service sent none"}`);
    return { ok: false, steps };
  }
  let ok = false;
  try {
    const proof = fromHex(q.proof.store);
    const root = fromHex(q.storeHash);
    const key = fromHex(q.key);
    const keyOk = q.value === null ? verifyNonMembership(proof, root, key) : verifyMembership(proof, root, key, fromHex(q.value));
    steps.push(`${mark(keyOk)} ${q.value === null ? "the key is absent" : "the key holds this value"} in the store whose root hash is ${q.storeHash.slice(0, 16)}…`);
    ok = keyOk;
    if (q.appHash !== null) {
      const appOk = q.proof.app !== null && verifyStoreInApp(fromHex(q.proof.app), fromHex(q.appHash), store, root);
      steps.push(`${mark(appOk)} store ${store} has that root hash under app hash ${q.appHash.slice(0, 16)}…`);
      ok = ok && appOk;
    }
  } catch (e) {
    steps.push(`✗ ${String(e instanceof Error ? e.message : e)}`);
    ok = false;
  }
  return { ok, steps };
}

byId("lookup", HTMLFormElement).addEventListener("submit", (event) => {
  event.preventDefault();
  const result = byId("lookup-result", HTMLDivElement);
  // Hidden until the answer is in, so that an old answer is never read as the new one.
  result.hidden = true;
  void (async () => {
    try {
      const store = storePick.value;
      const key = keyHex(byId("lookup-key", HTMLInputElement).value, byId("lookup-text", HTMLInputElement).checked);
      if (key === "") throw new Error("type a key");
      const height = heightOf(byId("lookup-height", HTMLInputElement).value);
      const q = /** @type {Query} */ (await api(`v1/query?${qs({ store, key, height, prove: "true" })}`));
      const { ok, steps } = verifyAnswer(q, store);
      const verdict = byId("verdict", HTMLParagraphElement);
      verdict.dataset["verified"] = String(ok);
      verdict.textContent = ok
        ? `✓ verified ${q.value === null ? "absent" : "present"} at height ${q.height}`
        : `✗ not verified (height ${q.height})`;
      byId("lookup-height-shown", HTMLElement).textContent = String(q.height);
      byId("lookup-key-shown", HTMLElement).replaceChildren(bytesView(q.key, 400));
      const value = byId("lookup-value", HTMLElement);
      if (q.value === null) value.replaceChildren(make("span", "absent", "absent"));
      else value.replaceChildren(bytesView(q.value, 400), make("span", `${q.value.length / 2} bytes`, "muted size"));
      byId("lookup-store-hash", HTMLElement).textContent = q.storeHash;
      byId("lookup-app-hash", HTMLElement).textContent = q.appHash ?? "none (a plain store folder)";
      byId("verdict-steps", HTMLUListElement).replaceChildren(...steps.map((s) => make("li", s)));
      result.hidden = false;
      showError("lookup-error", undefined);
    } catch (e) {
      showError("lookup-error", String(e instanceof Error ? e.message : e));
    }
  })();
});

// ---- keys in order --------------------------------------------------------------------------------------------------

/** Where the next range page starts: the store and height of the first page, and its `next`. */
let rangeNext = /** @type {{ store: string, height: number, limit: number, start: string } | undefined} */ (undefined);

/**
 * Shows one page of /v1/range.
 * @param {string} store
 * @param {string | undefined} start
 * @param {number | undefined} height
 * @param {number} limit
 */
async function showRange(store, start, height, limit) {
  const page = /** @type {RangePage} */ (await api(`v1/range?${qs({ store, start, height, limit })}`));
  byId("range-rows", HTMLTableSectionElement).replaceChildren(
    ...page.pairs.map((p) => {
      const tr = document.createElement("tr");
      const [k, v] = [document.createElement("td"), document.createElement("td")];
      k.append(bytesView(p.key));
      v.append(bytesView(p.value));
      tr.append(k, v);
      return tr;
    }),
  );
  byId("range-table", HTMLTableElement).hidden = false;
  const info = byId("range-info", HTMLParagraphElement);
  info.hidden = false;
  info.textContent = `${page.pairs.length} key${page.pairs.length === 1 ? "" : "s"} of ${store} at height ${page.height}${page.next === null ? ", the last page" : ""}`;
  // Later pages read the same height, so the pages fit together.
  rangeNext = page.next === null ? undefined : { store, height: page.height, limit, start: page.next };
  byId("range-next", HTMLButtonElement).hidden = rangeNext === undefined;
}

/**
 * Runs a range action, showing its failure.
 * @param {() => Promise<void>} action
 */
function rangeAction(action) {
  byId("range-table", HTMLTableElement).hidden = true;
  byId("range-info", HTMLParagraphElement).hidden = true;
  action().then(
    () => showError("range-error", undefined),
    (e) => showError("range-error", String(e instanceof Error ? e.message : e)),
  );
}

byId("range", HTMLFormElement).addEventListener("submit", (event) => {
  event.preventDefault();
  rangeAction(async () => {
    const typed = byId("range-start", HTMLInputElement).value;
    const start = typed === "" ? undefined : keyHex(typed, byId("range-text", HTMLInputElement).checked);
    const limit = heightOf(byId("range-limit", HTMLInputElement).value) ?? 20;
    await showRange(storePick.value, start, heightOf(byId("range-height", HTMLInputElement).value), limit);
  });
});

byId("range-next", HTMLButtonElement).addEventListener("click", () => {
  const n = rangeNext;
  if (n !== undefined) rangeAction(() => showRange(n.store, n.start, n.height, n.limit));
});

// ---- the changes of a version ---------------------------------------------------------------------------------------

/**
 * The first `max` changes of `version` of `store`, read line by line from the NDJSON stream (then cancelled), and
 * whether there were more.
 * @param {string} store
 * @param {number} version
 * @param {number} max
 * @returns {Promise<{ changes: Change[], more: boolean }>}
 */
async function readChanges(store, version, max) {
  const res = await fetch(`v1/changes?${qs({ store, from: version, to: version })}`);
  if (!res.ok || res.body === null) throw await failure(res);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  /** @type {Change[]} */
  const changes = [];
  let rest = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const lines = (rest + value).split("\n");
    rest = lines.pop() ?? "";
    for (const l of lines) {
      const c = /** @type {Change | { error: { code: string, message: string } }} */ (JSON.parse(l));
      if ("error" in c) throw new Error(`${c.error.code}: ${c.error.message}`);
      if (changes.length === max) {
        await reader.cancel();
        return { changes, more: true };
      }
      changes.push(c);
    }
  }
  return { changes, more: false };
}

byId("changes", HTMLFormElement).addEventListener("submit", (event) => {
  event.preventDefault();
  byId("changes-table", HTMLTableElement).hidden = true;
  byId("changes-info", HTMLParagraphElement).hidden = true;
  void (async () => {
    try {
      const store = storePick.value;
      const version = heightOf(byId("changes-version", HTMLInputElement).value) ?? status?.latest;
      if (version === undefined || version === 0) throw new Error("no version to show");
      const { changes, more } = await readChanges(store, version, MAX_CHANGES_SHOWN);
      byId("changes-rows", HTMLTableSectionElement).replaceChildren(
        ...changes.map((c) => {
          const tr = document.createElement("tr");
          const [k, v] = [document.createElement("td"), document.createElement("td")];
          k.append(bytesView(c.key));
          v.append(c.value === null ? make("span", "removed", "removed") : bytesView(c.value));
          tr.append(k, v);
          return tr;
        }),
      );
      byId("changes-table", HTMLTableElement).hidden = false;
      const removed = changes.filter((c) => c.value === null).length;
      const info = byId("changes-info", HTMLParagraphElement);
      info.hidden = false;
      info.textContent = `version ${version} of ${store}: ${more ? `the first ${changes.length}` : changes.length} change${changes.length === 1 ? "" : "s"}, ${removed} removed`;
      showError("changes-error", undefined);
    } catch (e) {
      showError("changes-error", String(e instanceof Error ? e.message : e));
    }
  })();
});

byId("refresh", HTMLButtonElement).addEventListener("click", () => void loadStatus());
void loadStatus();
