// @ts-check
/**
 * Proofs in the browser: an answer of /v1/query?prove=true checked here by `iavlite/verify` (the key against the store
 * hash, the store hash against the app hash), and its proof bytes shown on demand, with a copy button.
 * @module
 */
import { verifyMembership, verifyNonMembership, verifyStoreInApp } from "iavlite/verify";
import { fromHex, make, messageOf } from "./page.js";

/** @typedef {import("./service.js").Query} Query */

/**
 * Whether the answer's proofs verify here: the key's value (or its absence) under the store hash, and on a
 * multi-store folder the store hash under the app hash. Each step's outcome is told.
 * @param {Query} q
 * @param {string} store
 * @returns {{ ok: boolean, steps: string[] }}
 */
export function verifyAnswer(q, store) {
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
    steps.push(`✗ ${messageOf(e)}`);
    ok = false;
  }
  return { ok, steps };
}

/**
 * Copies `text` to the clipboard; where the clipboard is refused (no permission, or not a secure context), selects the
 * text of `shown` instead (and tries the older copy command on it), so that Ctrl+C copies it. Says which it did.
 * @param {string} text
 * @param {HTMLElement} shown
 * @returns {Promise<string>}
 */
async function copy(text, shown) {
  try {
    await navigator.clipboard.writeText(text);
    return "copied";
  } catch {
    const range = document.createRange();
    range.selectNodeContents(shown);
    const selection = window.getSelection();
    selection?.removeAllRanges();
    selection?.addRange(range);
    // The older way, which some browsers still allow within the click.
    return document.execCommand("copy") ? "copied" : "selected: press Ctrl+C to copy";
  }
}

/**
 * One proof's bytes in hex, with its size and a copy button.
 * @param {string} name
 * @param {string} hex
 * @returns {HTMLElement}
 */
function proofBlock(name, hex) {
  const block = make("div", "", "proof");
  const code = make("code", hex, "proof-hex");
  const button = make("button", "Copy", "copy small");
  button.type = "button";
  const said = make("span", "", "muted copied");
  said.setAttribute("role", "status");
  button.addEventListener("click", () => void copy(hex, code).then((s) => (said.textContent = s)));
  block.append(make("div", `${name} · ${hex.length / 2} bytes `, "proof-name"), button, said, code);
  return block;
}

/**
 * The proofs of answer `q` (ICS-23 CommitmentProof protobuf bytes, hex), under a toggle that shows them on demand.
 * @param {Query} q
 * @param {string} store
 * @returns {HTMLElement}
 */
export function proofBytes(q, store) {
  const box = make("div", "", "proof-bytes");
  const toggle = make("button", "Show proof", "toggle small");
  toggle.type = "button";
  toggle.setAttribute("aria-expanded", "false");
  const body = make("div", "", "proof-list");
  body.hidden = true;
  if (q.proof.store !== null) body.append(proofBlock(`key proof in store ${store}`, q.proof.store));
  if (q.proof.app !== null) body.append(proofBlock(`store proof under the app hash`, q.proof.app));
  if (body.childElementCount === 0) body.append(make("p", "the service sent no proof", "muted"));
  toggle.addEventListener("click", () => {
    body.hidden = !body.hidden;
    toggle.setAttribute("aria-expanded", String(!body.hidden));
    toggle.textContent = body.hidden ? "Show proof" : "Hide proof";
  });
  box.append(toggle, body);
  return box;
}
