// @ts-check
/**
 * The view shown, kept in the URL's hash (`#view=lookup&store=bank&key=…&height=…`), so that it can be shared or
 * bookmarked and Back and Forward return to the view before: each form sent (and each page turned) pushes an entry,
 * and the view the URL names is shown again, its form filled in, on load and on Back/Forward. Keys are hex in the
 * URL. What a URL cannot hold well (the stack of pages before the one shown) rides in the entry's state.
 * @module
 */
import { qs } from "./service.js";
import { pickStore } from "./status.js";

/** @typedef {Record<string, string | number | undefined>} Params */
/** @typedef {{ fill: boolean, state: unknown }} How how a view is shown: its form filled from the URL or not, and the entry's state */
/**
 * @typedef {{ section: HTMLElement, show: (p: URLSearchParams, how: How) => Promise<void>, clear: () => void }} View
 * a view: its section of the page, showing it from the URL's parameters (failures shown in it, never thrown), and
 * hiding what it showed
 */

/** The views by name. */
const views = /** @type {Map<string, View>} */ (new Map());

/**
 * Adds view `name`.
 * @param {string} name
 * @param {View} view
 */
export function addView(name, view) {
  views.set(name, view);
}

/**
 * Shows view `name` with `params`, in a new entry of the browser's history (the same entry when the URL is the same).
 * @param {string} name
 * @param {Params} params
 * @param {unknown} [state]
 * @returns {Promise<void>}
 */
export function navigate(name, params, state = null) {
  const hash = `#${qs({ view: name, ...params })}`;
  if (hash === location.hash) history.replaceState(state, "", hash);
  else history.pushState(state, "", hash);
  return views.get(name)?.show(new URLSearchParams(hash.slice(1)), { fill: false, state }) ?? Promise.resolve();
}

/** Shows the view the URL names, its store picked and its form filled in, and clears the others. */
export function restore() {
  const p = new URLSearchParams(location.hash.slice(1));
  const name = p.get("view") ?? "";
  for (const [n, v] of views) if (n !== name) v.clear();
  const view = views.get(name);
  if (view === undefined) return Promise.resolve();
  const store = p.get("store");
  if (store !== null) pickStore(store);
  view.section.scrollIntoView({ block: "start" });
  return view.show(p, { fill: true, state: /** @type {unknown} */ (history.state) });
}

/**
 * The stack of page starts in an entry's state under `name` (each a string, "" for the first page); undefined when the
 * entry has none (a URL opened anew).
 * @param {unknown} state
 * @param {string} name
 * @returns {string[] | undefined}
 */
export function stackOf(state, name) {
  const s = typeof state === "object" && state !== null ? /** @type {Record<string, unknown>} */ (state)[name] : undefined;
  return Array.isArray(s) && s.every((x) => typeof x === "string") ? /** @type {string[]} */ (s) : undefined;
}
