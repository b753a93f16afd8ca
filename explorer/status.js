// @ts-check
/**
 * The stores and their versions (/v1/status), asked again every few seconds while the page is shown, so that the
 * header's latest version follows the writer without a reload; and the store the forms use: picked in the list or the
 * stores table (its row highlighted), with its kept versions shown beside every height field.
 * @module
 */
import { byId, count, messageOf, showError, tableRow } from "./page.js";
import { api } from "./service.js";

/** @typedef {import("./service.js").Status} Status */

/** How often the status is asked again while the page is shown, ms. */
const POLL_MS = 3000;

const storePick = byId("store", HTMLSelectElement);

/** The last status. */
let status = /** @type {Status | undefined} */ (undefined);

/** The store the forms use. */
export function storeName() {
  return storePick.value;
}

/**
 * Picks store `name` for the forms when there is one of that name; returns whether there was.
 * @param {string} name
 * @returns {boolean}
 */
export function pickStore(name) {
  if (!Array.from(storePick.options).some((o) => o.value === name)) return false;
  storePick.value = name;
  showPicked();
  return true;
}

/**
 * The versions of `store` a height may name: from the oldest it keeps to the latest every store holds (what the
 * service answers from); undefined before the first status.
 * @param {string} store
 * @returns {{ earliest: number, latest: number } | undefined}
 */
export function keptOf(store) {
  const st = status?.stores.find((s) => s.name === store);
  return status === undefined || st === undefined ? undefined : { earliest: st.earliest, latest: Math.min(st.latest, status.latest) };
}

/** The latest version every store holds, as last seen (undefined before the first status). */
export function latestVersion() {
  return status?.latest;
}

/** Highlights the picked store's row and shows its kept versions beside the height fields. */
function showPicked() {
  const name = storePick.value;
  for (const tr of byId("stores", HTMLTableElement).tBodies[0]?.rows ?? []) {
    const picked = tr.dataset["store"] === name;
    tr.classList.toggle("picked", picked);
    if (picked) tr.setAttribute("aria-current", "true");
    else tr.removeAttribute("aria-current");
  }
  const kept = keptOf(name);
  for (const e of document.querySelectorAll(".kept")) {
    e.textContent = kept === undefined || kept.latest === 0 ? "" : `kept: ${kept.earliest}–${kept.latest}`;
  }
}

/** The stores the table shows, as JSON. */
let storesShown = "";

/**
 * Shows status `s`: the header, the facts, the stores table and the store list (rebuilt only when the stores
 * changed, so that a list the user has open is left alone).
 * @param {Status} s
 */
function showStatus(s) {
  byId("summary", HTMLParagraphElement).textContent = `${count(s.stores.length, "store")} · versions ${s.earliest}–${s.latest}`;
  byId("summary", HTMLParagraphElement).title = `as of ${new Date().toLocaleTimeString()}`;
  byId("latest", HTMLElement).textContent = String(s.latest);
  byId("earliest", HTMLElement).textContent = String(s.earliest);
  byId("app-hash", HTMLElement).textContent = s.appHash ?? "none (a plain store folder has no app hash)";
  const body = byId("stores", HTMLTableElement).tBodies[0];
  if (body === undefined) throw new Error("the stores table has no body");
  // Rebuilt only when it changed, so that a row is not replaced under the pointer every few seconds.
  const rows = JSON.stringify(s.stores);
  if (storesShown !== rows) {
    storesShown = rows;
    body.replaceChildren(
      ...s.stores.map((st) => {
        const tr = tableRow([st.name, String(st.earliest), String(st.latest), st.hash ?? "–"]);
        tr.cells[0]?.classList.add("name");
        tr.cells[3]?.classList.add("hash");
        tr.dataset["store"] = st.name;
        // A row picks its store for the forms.
        tr.addEventListener("click", () => pickStore(st.name));
        return tr;
      }),
    );
  }
  const names = s.stores.map((st) => st.name);
  if (names.join("\n") !== Array.from(storePick.options, (o) => o.value).join("\n")) {
    const picked = storePick.value;
    storePick.replaceChildren(...names.map((n) => new Option(n, n)));
    if (names.includes(picked)) storePick.value = picked;
  }
  showPicked();
}

/** Whether a status request is under way (a slow one is not asked again on top of itself). */
let asking = false;

/** Asks /v1/status and shows it; a failure is shown in the page's error line. Resolves whether it was shown. */
export async function loadStatus() {
  if (asking) return false;
  asking = true;
  try {
    status = /** @type {Status} */ (await api("v1/status"));
    showStatus(status);
    showError("page-error", undefined);
    return true;
  } catch (e) {
    showError("page-error", `status: ${messageOf(e)}`);
    return false;
  } finally {
    asking = false;
  }
}

/** Asks the status again every few seconds while the page is shown (at once when it is shown again). */
export function followStatus() {
  storePick.addEventListener("change", showPicked);
  byId("refresh", HTMLButtonElement).addEventListener("click", () => void loadStatus());
  setInterval(() => {
    if (!document.hidden) void loadStatus();
  }, POLL_MS);
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) void loadStatus();
  });
}
