// @ts-check
/**
 * The keys view: the keys of a store in order from a key, a page at a time (/v1/range), with Next (the page's `next`)
 * and Previous (a stack of the page starts before, or for a URL opened anew the page found by reading backwards).
 * Every page reads the height of the first, so that the pages fit together.
 * @module
 */
import { byId, bytesView, count, heightOf, KeyField, messageOf, readKey, showError, tableRow } from "./page.js";
import { api, qs } from "./service.js";
import { storeName } from "./status.js";
import { addView, navigate, stackOf } from "./url.js";

/** @typedef {import("./service.js").RangePage} RangePage */

const start = new KeyField("range-start", "range-text");
const height = byId("range-height", HTMLInputElement);
const limitField = byId("range-limit", HTMLInputElement);
const table = byId("range-table", HTMLTableElement);
const info = byId("range-info", HTMLParagraphElement);
const prevButton = byId("range-prev", HTMLButtonElement);
const nextButton = byId("range-next", HTMLButtonElement);

/**
 * The page shown: its store, the form's start key (hex, undefined: the first key), the height every page reads, the
 * page size, this page's start (undefined on the first page), the next page's, and the starts of the pages before
 * (the stack Previous pops, "" for the first page; undefined for a URL opened anew).
 * @typedef {{ store: string, from: string | undefined, height: number, limit: number, at: string | undefined,
 *   next: string | null, before: string[] | undefined }} Shown
 */
let shown = /** @type {Shown | undefined} */ (undefined);
let asked = 0;

/**
 * Shows the page of keys the URL's parameters name: `store`, `start` (hex), `height`, `limit`, and `at` (this page's
 * start, after the first page).
 * @param {URLSearchParams} p
 * @param {import("./url.js").How} how
 */
async function show(p, how) {
  const mine = ++asked;
  table.hidden = info.hidden = prevButton.hidden = nextButton.hidden = true;
  try {
    const store = p.get("store") ?? storeName();
    const from = p.get("start") || undefined;
    const h = heightOf(p.get("height") ?? "");
    const limit = heightOf(p.get("limit") ?? "", "a page size") ?? 20;
    const at = p.get("at") || undefined;
    if (how.fill) {
      if (from === undefined) start.input.value = "";
      else start.fill(readKey(from, false).hex);
      start.showReading();
      height.value = h === undefined ? "" : String(h);
      limitField.value = String(limit);
    }
    const page = /** @type {RangePage} */ (await api(`v1/range?${qs({ store, start: at ?? from, height: h, limit })}`));
    if (mine !== asked) return;
    byId("range-rows", HTMLTableSectionElement).replaceChildren(...page.pairs.map((pair) => tableRow([bytesView(pair.key), bytesView(pair.value)])));
    table.hidden = info.hidden = false;
    info.textContent = `${count(page.pairs.length, "key")} of ${store} at height ${page.height}${page.next === null ? ", the last page" : ""}`;
    shown = { store, from, height: page.height, limit, at, next: page.next, before: at === undefined ? [] : stackOf(how.state, "before") };
    prevButton.hidden = at === undefined;
    nextButton.hidden = page.next === null;
    showError("range-error", undefined);
  } catch (e) {
    if (mine === asked) showError("range-error", messageOf(e));
  }
}

/**
 * Shows the page starting at `at` (undefined: the first page) of the keys shown, with `before` the starts before it.
 * @param {Shown} s
 * @param {string | undefined} at
 * @param {string[]} before
 */
function turnTo(s, at, before) {
  return navigate("keys", { store: s.store, start: s.from, height: s.height, limit: s.limit, at }, { before });
}

/**
 * The start of the page before page `s` when the stack of starts is unknown (a URL opened anew): the `limit` keys
 * just below its start, read backwards; undefined when they reach the first page.
 * @param {Shown} s
 * @param {string} at
 * @returns {Promise<string | undefined>}
 */
async function pageBelow(s, at) {
  const below = /** @type {RangePage} */ (await api(`v1/range?${qs({ store: s.store, start: s.from, end: at, height: s.height, limit: s.limit, reverse: "true" })}`));
  return below.next === null ? undefined : below.pairs.at(-1)?.key;
}

nextButton.addEventListener("click", () => {
  const s = shown;
  if (s === undefined || s.next === null) return;
  void turnTo(s, s.next, [...(s.before ?? []), s.at ?? ""]);
});

prevButton.addEventListener("click", () => {
  const s = shown;
  if (s === undefined || s.at === undefined) return;
  const at = s.at;
  if (s.before !== undefined && s.before.length > 0) {
    void turnTo(s, s.before.at(-1) || undefined, s.before.slice(0, -1));
  } else {
    // The table goes while the page below is looked for, so that nothing reads the old rows as the new page's.
    table.hidden = info.hidden = prevButton.hidden = nextButton.hidden = true;
    pageBelow(s, at).then(
      (prev) => turnTo(s, prev, []),
      (e) => showError("range-error", messageOf(e)),
    );
  }
});

byId("range", HTMLFormElement).addEventListener("submit", (event) => {
  event.preventDefault();
  try {
    const limit = heightOf(limitField.value, "a page size") ?? 20;
    void navigate("keys", { store: storeName(), start: start.reading()?.hex, height: heightOf(height.value), limit });
  } catch (e) {
    table.hidden = info.hidden = true;
    showError("range-error", messageOf(e));
  }
});

addView("keys", {
  section: byId("range-section", HTMLElement),
  show,
  clear() {
    asked++;
    table.hidden = info.hidden = prevButton.hidden = nextButton.hidden = true;
    showError("range-error", undefined);
  },
});
