// @ts-check
/**
 * The lookup view: a key at a height (/v1/query?prove=true), its proofs checked in the browser, the proof bytes on
 * demand, and a way on to the key's history.
 * @module
 */
import { showHistoryOf } from "./history.js";
import { byId, bytesView, heightOf, KeyField, make, messageOf, readKey, showError } from "./page.js";
import { proofBytes, verifyAnswer } from "./proofs.js";
import { api, qs } from "./service.js";
import { storeName } from "./status.js";
import { addView, navigate } from "./url.js";

/** @typedef {import("./service.js").Query} Query */

const key = new KeyField("lookup-key", "lookup-text");
const height = byId("lookup-height", HTMLInputElement);
const result = byId("lookup-result", HTMLDivElement);

/** The key and store of the answer shown, for its history button. */
let shown = /** @type {{ store: string, key: string } | undefined} */ (undefined);
/** Counts lookups, so that an answer that comes after a newer lookup began is dropped. */
let asked = 0;

/**
 * Shows answer `q` of store `store`: the verdict of its proofs, the facts, the steps, the proof bytes.
 * @param {Query} q
 * @param {string} store
 */
function showAnswer(q, store) {
  const { ok, steps } = verifyAnswer(q, store);
  const verdict = byId("verdict", HTMLParagraphElement);
  verdict.dataset["verified"] = String(ok);
  verdict.textContent = ok ? `✓ verified ${q.value === null ? "absent" : "present"} at height ${q.height}` : `✗ not verified (height ${q.height})`;
  byId("lookup-height-shown", HTMLElement).textContent = String(q.height);
  byId("lookup-key-shown", HTMLElement).replaceChildren(bytesView(q.key, 400));
  const value = byId("lookup-value", HTMLElement);
  if (q.value === null) value.replaceChildren(make("span", "absent", "absent"));
  else value.replaceChildren(bytesView(q.value, 400), make("span", `${q.value.length / 2} bytes`, "muted size"));
  byId("lookup-store-hash", HTMLElement).textContent = q.storeHash;
  byId("lookup-app-hash", HTMLElement).textContent = q.appHash ?? "none (a plain store folder)";
  byId("verdict-steps", HTMLUListElement).replaceChildren(...steps.map((s) => make("li", s)));
  byId("lookup-proof", HTMLDivElement).replaceChildren(proofBytes(q, store));
  shown = { store, key: q.key };
}

/**
 * Shows the lookup the URL's parameters name (`store`, `key` in hex, `height`).
 * @param {URLSearchParams} p
 * @param {import("./url.js").How} how
 */
async function show(p, how) {
  const mine = ++asked;
  // Hidden until the answer is in, so that an old answer is never read as the new one.
  result.hidden = true;
  try {
    const store = p.get("store") ?? storeName();
    const k = readKey(p.get("key") ?? "", false).hex;
    const h = heightOf(p.get("height") ?? "");
    if (how.fill) {
      key.fill(k);
      height.value = h === undefined ? "" : String(h);
    }
    if (k === "") throw new Error("type a key");
    const q = /** @type {Query} */ (await api(`v1/query?${qs({ store, key: k, height: h, prove: "true" })}`));
    if (mine !== asked) return;
    showAnswer(q, store);
    result.hidden = false;
    showError("lookup-error", undefined);
  } catch (e) {
    if (mine === asked) showError("lookup-error", messageOf(e));
  }
}

byId("lookup", HTMLFormElement).addEventListener("submit", (event) => {
  event.preventDefault();
  try {
    const k = key.reading();
    if (k === undefined) throw new Error("type a key");
    void navigate("lookup", { store: storeName(), key: k.hex, height: heightOf(height.value) });
  } catch (e) {
    result.hidden = true;
    showError("lookup-error", messageOf(e));
  }
});

byId("lookup-history", HTMLButtonElement).addEventListener("click", () => {
  if (shown !== undefined) void showHistoryOf(shown.store, shown.key);
});

addView("lookup", {
  section: byId("lookup-section", HTMLElement),
  show,
  clear() {
    asked++;
    result.hidden = true;
    showError("lookup-error", undefined);
  },
});
