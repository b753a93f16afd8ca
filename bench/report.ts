/**
 * Bench helpers: timing, order statistics, and the {@link Report} that prints every figure next to the floor it was
 * measured against in the same run (SPEC §7: ratios, never bare times, so a noisy machine does not lie).
 * @module
 */
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname } from "node:path";

/** Nanoseconds elapsed while running `fn` (its result is discarded). */
export function timeNs(fn: () => unknown): number {
  const t0 = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t0);
}

/** The `p`-quantile (0 ≤ p ≤ 1) of `xs`, linear between order statistics; NaN for an empty list. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const at = Math.min(Math.max(p, 0), 1) * (s.length - 1);
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return s[lo]! + (s[hi]! - s[lo]!) * (at - lo);
}

/** The median of `xs`. */
export function median(xs: readonly number[]): number {
  return percentile(xs, 0.5);
}

/** Sum of `xs`. */
export function sum(xs: readonly number[]): number {
  let t = 0;
  for (const x of xs) t += x;
  return t;
}

/** Runs a full garbage collection when node was started with `--expose-gc`; otherwise does nothing. */
export function maybeGc(): void {
  globalThis.gc?.();
}

/** Keeps results alive so the optimiser cannot drop the work that produced them. */
const sink: unknown[] = [undefined];
export function consume(x: unknown): void {
  sink[0] = x;
}

/** One line of the report. `ratio` is always "cost relative to the floor": 1 = as fast as the floor, > 1 = slower. */
export interface Row {
  section: string;
  name: string;
  value: number;
  unit: string;
  floorName: string;
  floorValue: number;
  ratio: number;
  /** Highest acceptable ratio, when the row has a target. */
  target?: number;
  pass?: boolean;
  note?: string;
}

/** What {@link Report.add} takes; the ratio and pass are computed. */
export interface RowInput extends Pick<Row, "section" | "name" | "value" | "unit" | "floorName" | "floorValue" | "target" | "note"> {
  /**
   * True for rates (ops/s) where more is better: the ratio is then floor / value. Default: true when the unit ends
   * in "/s", false otherwise (times, bytes, counts: ratio = value / floor).
   */
  higherIsBetter?: boolean;
}

/** Header facts about the run. */
export interface RunInfo {
  node: string;
  date: string;
  cpu: string;
  cores: number;
  platform: string;
  totalMemGiB: number;
  gcExposed: boolean;
  argv: string[];
}

/** Collects rows, prints them as an aligned table, and writes them as JSON (and Markdown) for the README. */
export class Report {
  readonly rows: Row[] = [];
  readonly info: RunInfo;
  readonly notes: string[] = [];

  constructor(argv: string[] = process.argv.slice(2)) {
    const cpus = os.cpus();
    this.info = {
      node: process.version,
      date: new Date().toISOString(),
      cpu: cpus[0]?.model.trim() ?? "unknown",
      cores: cpus.length,
      platform: `${os.platform()} ${os.release()} ${os.arch()}`,
      totalMemGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
      gcExposed: typeof globalThis.gc === "function",
      argv,
    };
  }

  /** Adds a row; returns it (with ratio and pass filled in). */
  add(input: RowInput): Row {
    const higher = input.higherIsBetter ?? input.unit.endsWith("/s");
    const ratio = higher ? input.floorValue / input.value : input.value / input.floorValue;
    const row: Row = {
      section: input.section,
      name: input.name,
      value: input.value,
      unit: input.unit,
      floorName: input.floorName,
      floorValue: input.floorValue,
      ratio,
    };
    if (input.target !== undefined) {
      row.target = input.target;
      row.pass = ratio <= input.target;
    }
    if (input.note !== undefined) row.note = input.note;
    this.rows.push(row);
    return row;
  }

  /** A free-text line printed under the table (diagnostics, caveats). */
  note(text: string): void {
    this.notes.push(text);
  }

  /** Progress output goes to stderr so that stdout holds only the report. */
  log(text: string): void {
    process.stderr.write(`${text}\n`);
  }

  header(): string {
    const i = this.info;
    return [
      `iavlite bench — ${i.date}`,
      `node ${i.node} · ${i.cpu} × ${i.cores} · ${i.platform} · ${i.totalMemGiB} GiB · gc ${i.gcExposed ? "exposed" : "not exposed"}`,
      `args: ${i.argv.join(" ") || "(none)"}`,
      `ratio = cost relative to a floor measured in this run (1.00 = the floor; lower is better)`,
    ].join("\n");
  }

  /** The report as an aligned plain-text table. */
  table(): string {
    const head = ["section", "measure", "value", "unit", "floor", "floor value", "ratio", "target", ""];
    const body = this.rows.map((r) => [
      r.section,
      r.name,
      fmt(r.value),
      r.unit,
      r.floorName,
      fmt(r.floorValue),
      `${r.ratio.toFixed(2)}×`,
      r.target === undefined ? "" : `≤ ${r.target}×`,
      r.pass === undefined ? "" : r.pass ? "PASS" : "MISS",
    ]);
    const all = [head, ...body];
    const widths = head.map((_, c) => Math.max(...all.map((row) => row[c]!.length)));
    const numeric = new Set([2, 5, 6]);
    const line = (row: string[]): string =>
      row.map((cell, c) => (numeric.has(c) ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!))).join("  ").trimEnd();
    const sep = widths.map((w) => "-".repeat(w)).join("  ");
    const out = [this.header(), "", line(head), sep, ...body.map(line)];
    const withNotes = this.rows.filter((r) => r.note !== undefined);
    if (withNotes.length > 0 || this.notes.length > 0) out.push("");
    for (const r of withNotes) out.push(`* ${r.section} / ${r.name}: ${r.note}`);
    for (const n of this.notes) out.push(`* ${n}`);
    return out.join("\n");
  }

  /** The rows as a GitHub Markdown table, for the README. */
  markdown(): string {
    const i = this.info;
    const out = [
      `Measured ${i.date.slice(0, 10)} on ${i.cpu} × ${i.cores}, node ${i.node}. Ratio = cost relative to the floor measured in the same run.`,
      "",
      "| section | measure | value | floor | ratio | target |",
      "|---|---|---:|---|---:|---|",
    ];
    for (const r of this.rows) {
      const target = r.target === undefined ? "" : `≤ ${r.target}× ${r.pass ? "✅" : "❌"}`;
      out.push(
        `| ${r.section} | ${esc(r.name)} | ${fmt(r.value)} ${r.unit} | ${esc(r.floorName)}: ${fmt(r.floorValue)} | ${r.ratio.toFixed(2)}× | ${target} |`,
      );
    }
    return out.join("\n");
  }

  print(): void {
    process.stdout.write(`${this.table()}\n`);
  }

  /** Writes `bench/out/results.json` and `bench/out/results.md` (or next to `jsonPath`). */
  write(jsonPath: string): void {
    mkdirSync(dirname(jsonPath), { recursive: true });
    writeFileSync(jsonPath, `${JSON.stringify({ info: this.info, rows: this.rows, notes: this.notes }, null, 2)}\n`);
    writeFileSync(jsonPath.replace(/\.json$/, ".md"), `${this.markdown()}\n`);
  }
}

function esc(s: string): string {
  return s.replace(/\|/g, "\\|");
}

/** Three significant figures, thousands separated, no exponent for the magnitudes a bench sees. */
export function fmt(x: number): string {
  if (!Number.isFinite(x)) return String(x);
  const a = Math.abs(x);
  if (a >= 1000) return Math.round(x).toLocaleString("en-US");
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  if (a >= 1) return x.toFixed(2);
  return x.toPrecision(3);
}
