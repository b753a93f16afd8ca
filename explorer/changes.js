// @ts-check
/**
 * The changes view: the changes of a version (/v1/changes, NDJSON), a page at a time, each beside the key's value
 * before it (its value at the version before, one /v1/query per row of the page, a few at a time).
 * @module
 */
import { byId, bytesView, count, heightOf, make, messageOf, showError, tableRow, valueView } from "./page.js";
import { api, mapBounded, qs, readChanges } from "./service.js";
import { keptOf, latestVersion, storeName } from "./status.js";
import { addView, navigate } from "./url.js";

/** @typedef {import("./service.js").Change} Change */
/** @typedef {import("./service.js").Query} Query */

/** Rows of a page unless the form says otherwise. */
const PAGE_SIZE = 100;
/** How many previous values are asked at once. */
const WIDTH = 4;

const versionField = byId("changes-version", HTMLInputElement);
const limitField = byId("changes-limit", HTMLInputElement);
const table = byId("changes-table", HTMLTableElement);
const info = byId("changes-info", HTMLParagraphElement);
const prevButton = byId("changes-prev", HTMLButtonElement);
const nextButton = byId("changes-next", HTMLButtonElement);

/** The page shown (page 1 is the first). */
let shown = /** @type {{ store: string, version: number, limit: number, page: number } | undefined} */ (undefined);
let asked = 0;

/**
 * The key's value before `change` (at the version before it): null when it had none, undefined when that version is
 * no longer kept (nothing is asked then).
 * @param {string} store
 * @param {Change} change
 * @returns {Promise<string | null | undefined>}
 */
async function valueBefore(store, change) {
  const before = change.version - 1;
  if (before === 0) return null;
  const kept = keptOf(store);
  if (kept !== undefined && before < kept.earliest) return undefined;
  const q = /** @type {Query} */ (await api(`v1/query?${qs({ store, key: change.key, height: before })}`));
  return q.value;
}

/**
 * The element showing a value before a change.
 * @param {string | null | undefined | Error} before
 * @returns {HTMLElement}
 */
function beforeView(before) {
  if (before === undefined) return make("span", "not kept", "muted");
  if (before instanceof Error) return make("span", before.message, "error small");
  return valueView(before);
}

/**
 * Shows the page of changes the URL's parameters name: `store`, `version` (default the latest), `limit`, `page`.
 * @param {URLSearchParams} p
 * @param {import("./url.js").How} how
 */
async function show(p, how) {
  const mine = ++asked;
  table.hidden = info.hidden = prevButton.hidden = nextButton.hidden = true;
  try {
    const store = p.get("store") ?? storeName();
    const typed = heightOf(p.get("version") ?? "", "a version");
    const limit = heightOf(p.get("limit") ?? "", "a page size") ?? PAGE_SIZE;
    const page = heightOf(p.get("page") ?? "", "a page") ?? 1;
    if (how.fill) {
      versionField.value = typed === undefined ? "" : String(typed);
      limitField.value = String(limit);
    }
    const version = typed ?? latestVersion();
    if (version === undefined || version === 0) throw new Error("no version to show");
    const { changes, more } = await readChanges(store, version, (page - 1) * limit, limit);
    const before = await mapBounded(changes, WIDTH, (c) => valueBefore(store, c).catch((/** @type {unknown} */ e) => new Error(messageOf(e))));
    if (mine !== asked) return;
    byId("changes-rows", HTMLTableSectionElement).replaceChildren(
      ...changes.map((c, i) => tableRow([bytesView(c.key), beforeView(before[i]), c.value === null ? make("span", "removed", "removed") : bytesView(c.value)])),
    );
    table.hidden = info.hidden = false;
    const first = (page - 1) * limit;
    const removed = changes.filter((c) => c.value === null).length;
    const which = changes.length === 0 ? "no changes" : more ? `changes ${first + 1}–${first + changes.length}, more on the next page` : page === 1 ? count(changes.length, "change") : `changes ${first + 1}–${first + changes.length} of ${first + changes.length}`;
    info.textContent = `version ${version} of ${store}: ${which}, ${removed} removed`;
    shown = { store, version, limit, page };
    prevButton.hidden = page === 1;
    nextButton.hidden = !more;
    showError("changes-error", undefined);
  } catch (e) {
    if (mine === asked) showError("changes-error", messageOf(e));
  }
}

/**
 * Shows page `page` of the changes shown.
 * @param {number} page
 */
function turnTo(page) {
  const s = shown;
  if (s !== undefined) void navigate("changes", { store: s.store, version: s.version, limit: s.limit, page: page === 1 ? undefined : page });
}

nextButton.addEventListener("click", () => turnTo((shown?.page ?? 0) + 1));
prevButton.addEventListener("click", () => turnTo(Math.max(1, (shown?.page ?? 2) - 1)));

byId("changes", HTMLFormElement).addEventListener("submit", (event) => {
  event.preventDefault();
  try {
    const version = heightOf(versionField.value, "a version");
    const limit = heightOf(limitField.value, "a page size") ?? PAGE_SIZE;
    void navigate("changes", { store: storeName(), version, limit });
  } catch (e) {
    table.hidden = info.hidden = true;
    showError("changes-error", messageOf(e));
  }
});

addView("changes", {
  section: byId("changes-section", HTMLElement),
  show,
  clear() {
    asked++;
    table.hidden = info.hidden = prevButton.hidden = nextButton.hidden = true;
    showError("changes-error", undefined);
  },
});
