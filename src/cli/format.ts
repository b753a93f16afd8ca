/**
 * Helpers shared by the CLI commands: global options, parsing keys and numbers, printing bytes, JSON and progress.
 *
 * Bytes on the command line: keys are read as UTF-8 unless `--hex` is given (then as hex, with or without `0x`).
 * Keys and values are printed as UTF-8 when they are valid UTF-8 without control characters (tab and newlines
 * allowed), otherwise as `0x`-prefixed hex; `--hex` always prints plain hex, `--utf8` always prints UTF-8 (invalid
 * sequences become U+FFFD). In JSON every byte string comes with its encoding (`"utf8"` or `"hex"`, no prefix).
 * @module
 */
import { join } from "node:path";
import cliProgress from "cli-progress";
import { InvalidArgumentError, type Command } from "commander";
import { toHex } from "../base/bytes.js";
import { multiStoreNames } from "../api/multi-tree.js";

/** A bad command line, found after commander parsed it: reported in one line with exit status 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** Options every command accepts (defined on the program). */
export interface GlobalOptions {
  json: boolean;
  hex: boolean;
  utf8: boolean;
}

/** How bytes are printed. */
export type BytesMode = "auto" | "hex" | "utf8";

/** The global options of the command an action runs for. */
export function globals(cmd: Command): GlobalOptions {
  const o = cmd.optsWithGlobals<Partial<GlobalOptions>>();
  return { json: o.json === true, hex: o.hex === true, utf8: o.utf8 === true };
}

/** The print mode the global options select. */
export function bytesMode(g: GlobalOptions): BytesMode {
  return g.hex ? "hex" : g.utf8 ? "utf8" : "auto";
}

/** Parses a key (or other byte string) given on the command line: hex with `--hex`, else UTF-8. */
export function parseBytes(text: string, g: GlobalOptions, what: string): Uint8Array {
  if (!g.hex) return new TextEncoder().encode(text);
  const h = text.startsWith("0x") || text.startsWith("0X") ? text.slice(2) : text;
  if (h.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(h)) throw new UsageError(`${what} is not a hex string: ${text}`);
  return new Uint8Array(Buffer.from(h, "hex"));
}

/** Parses a hex string such as a root hash (an optional `0x` is accepted). */
export function parseHex(text: string, what: string): Uint8Array {
  return parseBytes(text, { json: false, hex: true, utf8: false }, what);
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });
const lossyUtf8 = new TextDecoder("utf-8");
// C0 controls but tab and newlines, DEL and C1 controls: bytes that would garble a terminal line.
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;

/** Bytes as printable text: the text and the encoding it is in. */
export interface ShownBytes {
  text: string;
  encoding: "utf8" | "hex";
}

/** Chooses how to show `b` under `mode` (see the module comment). */
export function showBytes(b: Uint8Array, mode: BytesMode): ShownBytes {
  if (mode === "hex") return { text: toHex(b), encoding: "hex" };
  if (mode === "utf8") return { text: lossyUtf8.decode(b), encoding: "utf8" };
  try {
    const s = strictUtf8.decode(b);
    if (!CONTROL.test(s)) return { text: s, encoding: "utf8" };
  } catch {
    // not UTF-8: hex below
  }
  return { text: toHex(b), encoding: "hex" };
}

/** `b` as one piece of human output: hex is prefixed with `0x` in auto mode, so that it stands out from text. */
export function bytesText(b: Uint8Array, mode: BytesMode): string {
  const s = showBytes(b, mode);
  return s.encoding === "hex" && mode === "auto" ? `0x${s.text}` : s.text;
}

/** `b` for JSON output: `{ <name>: text, <name>Encoding: "utf8" | "hex" }`. */
export function bytesJson(name: string, b: Uint8Array, mode: BytesMode): Record<string, string> {
  const s = showBytes(b, mode);
  return { [name]: s.text, [`${name}Encoding`]: s.encoding };
}

/** Set once anything was written to stdout: a failure then adds no JSON error value after it. */
let stdoutUsed = false;
/** While a command runs on every store of a folder with --json, the value each store's run gave. */
let captured: unknown[] | undefined;

/** Notes that the command writes to stdout itself (a data stream). */
export function claimStdout(): void {
  stdoutUsed = true;
}

/** Writes one line to stdout. */
export function out(line: string): void {
  stdoutUsed = true;
  process.stdout.write(line + "\n");
}

/** Writes a value as pretty JSON to stdout (kept for the combined value while a command runs on every store). */
export function outJson(value: unknown): void {
  if (captured !== undefined) {
    captured.push(value);
    return;
  }
  stdoutUsed = true;
  process.stdout.write(JSON.stringify(value, null, 2) + "\n");
}

/**
 * After a failure with `--json`: writes `{ "error": { code, message } }` to stdout unless the command already wrote
 * there, so that stdout holds one JSON value whatever happened. On one line, as `changes --json` writes its values.
 */
export function outJsonError(code: string, message: string): void {
  if (stdoutUsed) return;
  captured = undefined;
  out(JSON.stringify({ error: { code, message } }));
}

/** Writes one line to stderr, prefixed with the program name. */
export function note(line: string): void {
  process.stderr.write(`iavlite: ${line}\n`);
}

/** A commander argument parser for an integer in `min..2^53-1`. */
export function intArg(min: number): (value: string) => number {
  return (value: string) => {
    // Number("") is 0 and Number("1e3") is 1000: accept plain decimal digits only.
    const n = /^[0-9]+$/.test(value.trim()) ? Number(value.trim()) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min) throw new InvalidArgumentError(`expected an integer ≥ ${min}, got "${value}".`);
    return n;
  };
}

/** Parser of version numbers. */
export const versionArg = intArg(1);

/** A byte count for people: 1.5 MiB. */
export function humanBytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${v.toFixed(1)} ${units[i]}`;
}

/** A progress display on stderr; it does nothing when stderr is not a terminal (pipes and logs stay clean). */
export interface Progress {
  /** Sets the current value, and optionally a new total and label. */
  update(value: number, total?: number, label?: string): void;
  /** Removes the bar. */
  stop(): void;
}

/** Starts a progress display: a bar when `total` is known, otherwise a counter. */
export function progress(label: string, total: number | undefined): Progress {
  if (process.stderr.isTTY !== true) return { update: () => undefined, stop: () => undefined };
  const format = total === undefined ? "{label} {value}" : "{label} [{bar}] {percentage}% {value}/{total} ETA {eta_formatted}";
  const bar = new cliProgress.SingleBar(
    { format, stream: process.stderr, clearOnComplete: true, hideCursor: true, etaBuffer: 50 },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total ?? 0, 0, { label });
  let currentTotal = total ?? 0;
  return {
    update(value, newTotal, newLabel) {
      if (newTotal !== undefined && newTotal !== currentTotal) {
        currentTotal = newTotal;
        bar.setTotal(newTotal);
      }
      bar.update(value, newLabel === undefined ? {} : { label: newLabel });
    },
    stop() {
      bar.stop();
    },
  };
}

let status = 0;
let jsonAsked = false;

/** How a command treats a multi-store folder (as `npm start` makes) given as its first argument. */
export type FolderUse =
  /**
   * On the store `--store` names, else on every store in turn; with `--json` the stores' values are combined into
   * one, `{ …summary, stores: [{ name, …value }] }`.
   */
  | "each"
  /** On the store `--store` names; without it, a usage error. */
  | "store"
  /** The command handles the folder itself (its stores and commit marker together), and `--store` (see {@link folderOf}). */
  | "folder"
  /** The argument is not a store folder. */
  | "none";

/**
 * Wraps a command's action so that its result becomes the exit status ({@link lastStatus}): commander's
 * `parseAsync` ignores what actions return. `folder` says how it runs on a multi-store folder; `summary` gives the
 * fields a combined JSON value ("each") carries beside the stores, from the worst exit status.
 */
export function action<A extends unknown[]>(
  fn: (...args: A) => number | Promise<number>,
  folder: FolderUse = "store",
  summary: (worst: number) => Record<string, unknown> = () => ({}),
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    const cmd = args[args.length - 1] as Command;
    const json = globals(cmd).json;
    jsonAsked = json;
    const dir = args[0];
    const stores = typeof dir === "string" && folder !== "none" && folder !== "folder" ? multiStoreNames(dir) : undefined;
    if (stores === undefined || typeof dir !== "string") {
      status = await fn(...args);
      return;
    }
    const asked = cmd.optsWithGlobals<{ store?: string }>().store;
    const names = asked !== undefined ? [asked] : folder === "each" ? stores : undefined;
    if (names === undefined) throw new UsageError(`${dir} holds several stores: pass --store with one of ${stores.join(", ")}`);
    for (const name of names) storeIn(dir, stores, name);
    const combine = json && asked === undefined;
    if (combine) captured = [];
    let worst = 0;
    for (const name of names) {
      if (names.length > 1 && !json) out(`── store ${name}`);
      const a = [...args] as A;
      a[0] = join(dir, "stores", name);
      worst = Math.max(worst, await fn(...a));
    }
    if (combine) {
      const values = captured ?? [];
      captured = undefined;
      outJson({ ...summary(worst), stores: names.map((name, i) => ({ name, ...(values[i] as object) })) });
    }
    status = worst;
  };
}

/** A multi-store folder as a "folder" command sees it: its stores, and the one `--store` names, if any. */
export interface Folder {
  stores: string[];
  store: string | undefined;
}

/** For a "folder" command: `dir` as a multi-store folder, or undefined when it is a plain store folder. */
export function folderOf(dir: string, cmd: Command): Folder | undefined {
  const stores = multiStoreNames(dir);
  if (stores === undefined) return undefined;
  const store = cmd.optsWithGlobals<{ store?: string }>().store;
  if (store !== undefined) storeIn(dir, stores, store);
  return { stores, store };
}

/** The folder of store `name` in multi-store folder `dir`; a usage error when it has no such store. */
export function storeIn(dir: string, stores: readonly string[], name: string): string {
  if (!stores.includes(name)) throw new UsageError(`${dir} has no store ${name} (stores: ${stores.join(", ")})`);
  return join(dir, "stores", name);
}

/** True when the command that ran (or failed) asked for JSON. */
export function jsonRequested(): boolean {
  return jsonAsked;
}

/** The exit status of the last action run. */
export function lastStatus(): number {
  return status;
}
