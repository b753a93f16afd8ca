/**
 * Helpers shared by the CLI commands: global options, parsing keys and numbers, printing bytes (as program.ts's help
 * says: "Keys and values"), JSON and progress.
 * @module
 */
import cliProgress from "cli-progress";
import { InvalidArgumentError, type Command } from "commander";
import { z } from "zod";
import { toHex } from "../base/bytes.js";

/**
 * A bad command line (a flag or value, a store name the folder lacks, a span that cannot be), found after commander
 * parsed it: reported in one line with exit status 2, and as code `USAGE` in JSON.
 */
export class UsageError extends Error {
  override readonly name = "UsageError";
  readonly code = "USAGE";
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

/** Chooses how to show `b` under `mode`: auto is UTF-8 when valid and without control characters, else hex. */
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

/** Starts keeping the values {@link outJson} is given, for one combined value of several stores. */
export function captureJson(): void {
  captured = [];
}

/** Stops keeping values; gives those kept since {@link captureJson}. */
export function capturedJson(): unknown[] {
  const values = captured ?? [];
  captured = undefined;
  return values;
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

/**
 * A commander argument parser for an integer in `min..max`. Its message completes the flag's name (program.ts puts
 * the flag first): `--refresh-ms must be an integer from 0 to 60000, got "-5"`.
 */
export function intArg(min: number, max = Number.MAX_SAFE_INTEGER): (value: string) => number {
  const range = max === Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `from ${min} to ${max}`;
  return (value: string) => {
    // Number("") is 0 and Number("1e3") is 1000: accept plain decimal digits (and a sign, to say what is wrong).
    const n = /^-?[0-9]+$/.test(value.trim()) ? Number(value.trim()) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) throw new InvalidArgumentError(`must be an integer ${range}, got "${value}"`);
    return n;
  };
}

/**
 * {@link intArg} with the bounds a library options schema sets for the value (a zod number, maybe with a default),
 * so that the command line refuses what the library would, in the same words as every other flag.
 */
export function intArgOf(schema: z.ZodType): (value: string) => number {
  let s: z.ZodType = schema;
  while (s instanceof z.ZodDefault || s instanceof z.ZodOptional) s = s.unwrap() as z.ZodType;
  if (!(s instanceof z.ZodNumber)) throw new TypeError("intArgOf needs a zod number schema");
  return intArg(s.minValue ?? 0, s.maxValue ?? Number.MAX_SAFE_INTEGER);
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

/** Runs `fn` with a progress display (a bar when `total` is known, otherwise a counter), removed after. */
export async function withProgress<T>(label: string, total: number | undefined, fn: (bar: Progress) => T | Promise<T>): Promise<T> {
  const bar = progress(label, total);
  try {
    return await fn(bar);
  } finally {
    bar.stop();
  }
}

function progress(label: string, total: number | undefined): Progress {
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
