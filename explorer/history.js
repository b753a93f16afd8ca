// @ts-check
/**
 * The history view: the versions where a key was set or removed (/v1/history), newest first, a page at a time, each
 * row's value provable at its version in the browser ("check proof": /v1/query at that height, checked as a lookup
 * is, and the proven value compared with the row's).
 * @module
 */
import { byId, bytesView, count, heightOf, KeyField, make, messageOf, readKey, showError, tableRow } from "./page.js";
import { verifyAnswer } from "./proofs.js";
import { api, qs } from "./service.js";
import { pickStore, storeName } from "./status.js";
import { addView, navigate, stackOf } from "./url.js";

/** @typedef {import("./service.js").HistoryPage} HistoryPage */
/** @typedef {import("./service.js").HistoryEntry} HistoryEntry */
/** @typedef {import("./service.js").Query} Query */

const key = new KeyField("history-key", "history-text");
const top = byId("history-to", HTMLInputElement);
const limitField = byId("history-limit", HTMLInputElement);
const table = byId("history-table", HTMLTableElement);
const info = byId("history-info", HTMLParagraphElement);
const prevButton = byId("history-prev", HTMLButtonElement);
const nextButton = byId("history-next", HTMLButtonElement);

/**
 * The page shown: its store and key, the newest version of its first page (`top`, so that later pages fit under it),
 * the page size, this page's `to` (undefined on the first page), the next page's, and the `to`s of the pages before
 * (the stack Previous pops; undefined for a URL opened anew).
 * @typedef {{ store: string, key: string, top: number, limit: number, at: number | undefined, next: number | null,
 *   before: string[] | undefined }} Shown
 */
let shown = /** @type {Shown | undefined} */ (undefined);
let asked = 0;

/**
 * Checks the row of `entry` at its version: the key's proof there, and that the proven value is the row's. The
 * verdict replaces the button in `cell`.
 * @param {string} store
 * @param {string} k
 * @param {HistoryEntry} entry
 * @param {HTMLElement} cell
 */
async function checkRow(store, k, entry, cell) {
  cell.replaceChildren(make("span", "checking…", "muted"));
  try {
    const q = /** @type {Query} */ (await api(`v1/query?${qs({ store, key: k, height: entry.version, prove: "true" })}`));
    const { ok, steps } = verifyAnswer(q, store);
    const same = q.height === entry.version && q.value === entry.value;
    if (!same) steps.push(`✗ the value proven at height ${q.height} is not this row's`);
    const verdict = make("span", ok && same ? "✓ verified" : "✗ not verified", "verdict small");
    verdict.dataset["verified"] = String(ok && same);
    verdict.title = steps.join("\n");
    cell.replaceChildren(verdict);
  } catch (e) {
    cell.replaceChildren(make("span", messageOf(e), "error small"));
  }
}

/**
 * The table row of `entry`: its version, set or removed, the value, and its proof check.
 * @param {string} store
 * @param {string} k
 * @param {HistoryEntry} entry
 * @returns {HTMLTableRowElement}
 */
function entryRow(store, k, entry) {
  const check = make("button", "check proof", "small check-proof");
  check.type = "button";
  const tr = tableRow([
    String(entry.version),
    make("span", entry.value === null ? "removed" : "set", entry.value === null ? "removed" : "set"),
    entry.value === null ? make("span", "–", "muted") : bytesView(entry.value),
    check,
  ]);
  tr.dataset["version"] = String(entry.version);
  const cell = tr.cells[3];
  if (cell !== undefined) check.addEventListener("click", () => void checkRow(store, k, entry, cell));
  return tr;
}

/**
 * Shows the history page the URL's parameters name: `store`, `key` (hex), `to` (the newest version searched; default
 * the latest), `limit`, and `at` (this page's `to`, after the first).
 * @param {URLSearchParams} p
 * @param {import("./url.js").How} how
 */
async function show(p, how) {
  const mine = ++asked;
  table.hidden = true;
  info.hidden = true;
  prevButton.hidden = nextButton.hidden = true;
  try {
    const store = p.get("store") ?? storeName();
    const k = readKey(p.get("key") ?? "", false).hex;
    const to = heightOf(p.get("to") ?? "", "to");
    const limit = heightOf(p.get("limit") ?? "", "a page size") ?? 20;
    const at = heightOf(p.get("at") ?? "", "at");
    if (how.fill) {
      key.fill(k);
      top.value = to === undefined ? "" : String(to);
      limitField.value = String(limit);
    }
    if (k === "") throw new Error("type a key");
    const page = /** @type {HistoryPage} */ (await api(`v1/history?${qs({ store, key: k, to: at ?? to, limit })}`));
    if (mine !== asked) return;
    byId("history-rows", HTMLTableSectionElement).replaceChildren(...page.entries.map((e) => entryRow(store, k, e)));
    table.hidden = false;
    info.hidden = false;
    const first = page.entries.at(-1)?.version;
    const last = page.entries[0]?.version;
    info.replaceChildren(
      `${count(page.entries.length, "change")} of `,
      bytesView(k, 64),
      ` in ${store}${first === undefined ? "" : `, versions ${first}–${last}`} (searched ${page.from}–${page.to}${page.from > 1 ? `; changes before ${page.from} are not kept` : ""})${page.next === null ? ", the last page" : ""}`,
    );
    shown = { store, key: k, top: at === undefined ? page.to : (to ?? page.to), limit, at, next: page.next, before: at === undefined ? [] : stackOf(how.state, "before") };
    prevButton.hidden = at === undefined;
    nextButton.hidden = page.next === null;
    showError("history-error", undefined);
  } catch (e) {
    if (mine === asked) showError("history-error", messageOf(e));
  }
}

/**
 * The `to` of the page before page `s` when the stack of pages is unknown (a URL opened anew): the `limit` changes
 * just above it, oldest first; undefined when they reach the first page.
 * @param {Shown} s
 * @param {number} at
 * @returns {Promise<number | undefined>}
 */
async function pageAbove(s, at) {
  const above = /** @type {HistoryPage} */ (await api(`v1/history?${qs({ store: s.store, key: s.key, from: at + 1, to: s.top, limit: s.limit, reverse: "true" })}`));
  return above.next === null ? undefined : above.entries.at(-1)?.version;
}

/**
 * Shows page `at` (undefined: the first) of the history shown, with `before` the stack of pages before it.
 * @param {Shown} s
 * @param {number | undefined} at
 * @param {string[]} before
 */
function turnTo(s, at, before) {
  return navigate("history", { store: s.store, key: s.key, to: s.top, limit: s.limit, at }, { before });
}

nextButton.addEventListener("click", () => {
  const s = shown;
  if (s === undefined || s.next === null) return;
  void turnTo(s, s.next, [...(s.before ?? []), s.at === undefined ? "" : String(s.at)]);
});

prevButton.addEventListener("click", () => {
  const s = shown;
  if (s === undefined || s.at === undefined) return;
  const at = s.at;
  if (s.before !== undefined && s.before.length > 0) {
    const prev = s.before.at(-1);
    void turnTo(s, prev === "" || prev === undefined ? undefined : Number(prev), s.before.slice(0, -1));
  } else {
    // The table goes while the page above is looked for, so that nothing reads the old rows as the new page's.
    table.hidden = info.hidden = prevButton.hidden = nextButton.hidden = true;
    pageAbove(s, at).then(
      (prev) => turnTo(s, prev, []),
      (e) => showError("history-error", messageOf(e)),
    );
  }
});

byId("history", HTMLFormElement).addEventListener("submit", (event) => {
  event.preventDefault();
  try {
    const k = key.reading();
    if (k === undefined) throw new Error("type a key");
    const to = heightOf(top.value, "to");
    const limit = heightOf(limitField.value, "a page size") ?? 20;
    void navigate("history", { store: storeName(), key: k.hex, to, limit });
  } catch (e) {
    table.hidden = true;
    showError("history-error", messageOf(e));
  }
});

/**
 * Shows the history of key `k` (hex) of `store` from the latest version, in its form too.
 * @param {string} store
 * @param {string} k
 */
export function showHistoryOf(store, k) {
  pickStore(store);
  key.fill(k);
  top.value = "";
  byId("history-section", HTMLElement).scrollIntoView({ block: "start" });
  return navigate("history", { store, key: k, limit: /^[1-9][0-9]{0,2}$/.test(limitField.value) ? limitField.value : 20 });
}

addView("history", {
  section: byId("history-section", HTMLElement),
  show,
  clear() {
    asked++;
    table.hidden = info.hidden = prevButton.hidden = nextButton.hidden = true;
    showError("history-error", undefined);
  },
});
