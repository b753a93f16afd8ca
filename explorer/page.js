// @ts-check
/**
 * The explorer's small helpers: the page's elements, bytes shown as text or hex, and what a form's fields read as (a
 * key as text or hex, a height).
 * @module
 */

// ---- the page's elements --------------------------------------------------------------------------------------------

/**
 * The element with `id`, of `type`; throws when the page lacks it (a page and script out of step).
 * @template {HTMLElement} T
 * @param {string} id
 * @param {{ new (): T, name: string }} type
 * @returns {T}
 */
export function byId(id, type) {
  const e = document.getElementById(id);
  if (!(e instanceof type)) throw new Error(`the page has no ${type.name} #${id}`);
  return e;
}

/**
 * Shows `message` in the error line `id` (hidden when undefined).
 * @param {string} id
 * @param {string | undefined} message
 */
export function showError(id, message) {
  const p = byId(id, HTMLParagraphElement);
  p.hidden = message === undefined;
  p.textContent = message ?? "";
}

/**
 * The message of something thrown.
 * @param {unknown} e
 * @returns {string}
 */
export function messageOf(e) {
  return String(e instanceof Error ? e.message : e);
}

/**
 * A new element with text and a class.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {string} text
 * @param {string} [className]
 * @returns {HTMLElementTagNameMap[K]}
 */
export function make(tag, text, className) {
  const e = document.createElement(tag);
  e.textContent = text;
  if (className !== undefined) e.className = className;
  return e;
}

/**
 * A table row of cells holding `cells` (a string is its text).
 * @param {Array<Node | string>} cells
 * @returns {HTMLTableRowElement}
 */
export function tableRow(cells) {
  const tr = document.createElement("tr");
  for (const c of cells) {
    const td = document.createElement("td");
    td.append(c);
    tr.append(td);
  }
  return tr;
}

/**
 * `n` and `word`, plural unless one.
 * @param {number} n
 * @param {string} word
 * @returns {string}
 */
export function count(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

// ---- bytes ----------------------------------------------------------------------------------------------------------

/**
 * Whether `text` is an even number of hex digits (none is not).
 * @param {string} text
 * @returns {boolean}
 */
function isHex(text) {
  return text.length > 0 && text.length % 2 === 0 && /^[0-9a-fA-F]*$/.test(text);
}

/**
 * Bytes of hex `text`; throws on anything but an even number of hex digits.
 * @param {string} text
 * @returns {Uint8Array}
 */
export function fromHex(text) {
  if (text !== "" && !isHex(text)) throw new Error(`not hex: "${text.slice(0, 24)}"`);
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/**
 * Lowercase hex of `bytes`.
 * @param {Uint8Array} bytes
 * @returns {string}
 */
export function toHex(bytes) {
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
export function asText(hex) {
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
export function bytesView(hex, max = 96) {
  if (hex === "") return make("span", "(empty)", "muted");
  const text = asText(hex);
  const shown = text ?? `0x${hex}`;
  const span = make("span", shown.length > max ? `${shown.slice(0, max)}…` : shown, text === undefined ? "hex" : "text");
  span.title = text === undefined ? `${hex.length / 2} bytes` : `hex ${hex}`;
  return span;
}

/**
 * A value, or its absence shown as `absent` (a removed key, or one never set).
 * @param {string | null} hex
 * @param {string} [absent]
 * @returns {HTMLElement}
 */
export function valueView(hex, absent = "absent") {
  return hex === null ? make("span", absent, "absent") : bytesView(hex);
}

// ---- what the forms read ----------------------------------------------------------------------------------------------

/** @typedef {{ hex: string, as: "text" | "hex" }} KeyReading */

/**
 * How a key typed in a form reads: as hex when it is an even number of hex digits (`0x` before them allowed) and the
 * "UTF-8 text" switch is off; anything else as its UTF-8 text, as typed. So `bank/k1` just works, and `cafe` needs
 * the switch to be read as text.
 * @param {string} typed
 * @param {boolean} text
 * @returns {KeyReading}
 */
export function readKey(typed, text) {
  const h = typed.trim().replace(/^0x/i, "");
  if (!text && isHex(h)) return { hex: h.toLowerCase(), as: "hex" };
  return { hex: toHex(new TextEncoder().encode(typed)), as: "text" };
}

/**
 * What to type for the key `hex` so that it reads back as the same key: its text when printable on one line (with
 * the text switch on when that text would read as hex), else its hex.
 * @param {string} hex
 * @returns {{ typed: string, text: boolean }}
 */
export function typedKey(hex) {
  const text = asText(hex);
  if (text === undefined || text === "" || /[\n\r]/.test(text)) return { typed: hex, text: false };
  return { typed: text, text: readKey(text, false).as === "hex" };
}

/**
 * A key field with its text switch and the note beside it that says how the key reads: kept up to date as the user
 * types, and read when the form is sent.
 */
export class KeyField {
  /**
   * @param {string} id the key input's id; its note's is `${id}-reading`
   * @param {string} textId the text switch's id
   */
  constructor(id, textId) {
    this.input = byId(id, HTMLInputElement);
    this.text = byId(textId, HTMLInputElement);
    this.note = byId(`${id}-reading`, HTMLElement);
    const update = () => this.showReading();
    this.input.addEventListener("input", update);
    this.text.addEventListener("change", update);
  }

  /** How the field reads now, or undefined when it is empty. @returns {KeyReading | undefined} */
  reading() {
    return this.input.value === "" ? undefined : readKey(this.input.value, this.text.checked);
  }

  /** Updates the note: "read as text" or "read as hex", with the key's length. */
  showReading() {
    const r = this.reading();
    this.note.dataset["as"] = r?.as ?? "";
    this.note.textContent = r === undefined ? "" : `read as ${r.as}${r.as === "text" && this.text.checked ? " (switch on)" : ""} · ${count(r.hex.length / 2, "byte")}`;
  }

  /**
   * Puts the key `hex` in the field, as text when it reads back the same.
   * @param {string} hex
   */
  fill(hex) {
    const t = typedKey(hex);
    this.input.value = t.typed;
    this.text.checked = t.text;
    this.showReading();
  }
}

/**
 * A height typed in a form: undefined when empty (the latest); throws when it is not a positive integer.
 * @param {string} typed
 * @param {string} [what]
 * @returns {number | undefined}
 */
export function heightOf(typed, what = "a height") {
  const t = typed.trim();
  if (t === "") return undefined;
  if (!/^[0-9]+$/.test(t) || Number(t) < 1 || !Number.isSafeInteger(Number(t))) throw new Error(`${what} is a positive integer, not "${t.slice(0, 24)}"`);
  return Number(t);
}
