/**
 * The bench's report. Every figure is a ratio to a floor measured in the same run (SPEC §7), never a bare time, so a
 * noisy shared machine moves both sides alike: the run's options, its rows and targets, scratch folders, and the
 * table on stdout with bench/out/results.json and results.md.
 * @module
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { int } from "./timing.js";

/** Where the report and the scratch folders go: bench/out/. */
export const OUT = fileURLToPath(new URL("./out/", import.meta.url));

/** What a figure is measured against: a floor from the same run (or a fixed target), and a note about it. */
export interface Floor {
  floor: string;
  floorValue: number;
  floorNote?: string;
}

/** One figure. `ratio` is the cost relative to the floor: 1 = as fast as the floor, above 1 = slower. */
export interface Row extends Omit<Floor, "floorNote"> {
  section: string;
  name: string;
  value: number;
  unit: string;
  ratio: number;
  /** Highest acceptable ratio: above it the row is a MISS and the run exits 1. */
  target?: number;
  /** A stricter target a later issue sets: printed, not yet enforced. */
  later?: number;
  pass?: boolean;
  note?: string;
}

/** A floor named `floor` with value `floorValue` and no note. */
export const floorOf = (floor: string, floorValue: number): Floor => ({ floor, floorValue });

/** The run: its options, its rows, and their table (stdout), results.json and results.md. */
export class Bench {
  readonly rows: Row[] = [];
  readonly notes: string[] = [];
  readonly info = {
    date: new Date().toISOString(),
    node: process.version,
    cpu: `${os.cpus()[0]?.model.trim() ?? "?"} × ${os.cpus().length}`,
    argv: process.argv.slice(2),
  };
  section = "";
  private readonly dirs: Array<{ dir: string; untilExit: boolean }> = [];

  constructor(readonly quick: boolean) {}

  /** `quick` on a quick run, `full` otherwise. */
  q<T>(quick: T, full: T): T {
    return this.quick ? quick : full;
  }

  /** Progress goes to stderr: stdout holds only the report. */
  log(text: string): void {
    process.stderr.write(`[${this.section}] ${text}\n`);
  }

  note(text: string): void {
    this.notes.push(`${this.section}: ${text}`);
  }

  /** Adds a figure. Rates (units ending in "/s") are better higher, so their ratio is floor / value. */
  row(name: string, value: number, unit: string, f: Floor, more: Pick<Row, "target" | "later" | "note"> = {}): void {
    const ratio = unit.endsWith("/s") ? f.floorValue / value : value / f.floorValue;
    const note = [more.note, f.floorNote].filter((x) => x !== undefined).join("; ") || undefined;
    const pass = more.target === undefined ? undefined : ratio <= more.target;
    const { floor, floorValue } = f;
    this.rows.push({ section: this.section, name, value, unit, floor, floorValue, ratio, ...more, note, pass });
    this.log(`${name}: ${fmt(value)} ${unit} against ${fmt(f.floorValue)}, ${ratio.toFixed(2)}×`);
  }

  /** A fresh folder under bench/out, deleted after the section (or, `untilExit`, after the run). */
  dir(name: string, untilExit = false): string {
    mkdirSync(OUT, { recursive: true });
    const dir = mkdtempSync(join(OUT, `tmp-${name}-`));
    this.dirs.push({ dir, untilExit });
    return dir;
  }

  cleanup(all: boolean): void {
    for (const d of this.dirs) if (all || !d.untilExit) rmSync(d.dir, { recursive: true, force: true });
  }

  table(): string {
    const head = ["section", "measure", "value", "floor", "floor value", "ratio", "target", ""];
    const cells = this.rows.map((r) => {
      const pass = r.pass === undefined ? "" : r.pass ? "PASS" : "MISS";
      const [value, ratio] = [`${fmt(r.value)} ${r.unit}`, `${r.ratio.toFixed(2)}×`];
      return [r.section, r.name, value, r.floor, fmt(r.floorValue), ratio, targetOf(r), pass];
    });
    const w = head.map((_, c) => Math.max(...[head, ...cells].map((row) => row[c]!.length)));
    const line = (row: string[]): string =>
      row.map((x, c) => ([2, 4, 5].includes(c) ? x.padStart(w[c]!) : x.padEnd(w[c]!))).join("  ").trimEnd();
    return [
      `iavlite bench ${this.info.date} · node ${this.info.node} · ${this.info.cpu} · ${this.info.argv.join(" ")}`,
      "ratio = cost relative to a floor measured in this run (lower is better); ≥ X× throughput is ≤ 1/X× cost",
      "",
      ...[head, w.map((n) => "-".repeat(n)), ...cells].map(line),
      "",
      ...this.rows.filter((r) => r.note !== undefined).map((r) => `* ${r.section} / ${r.name}: ${r.note}`),
      ...this.notes.map((n) => `* ${n}`),
    ].join("\n");
  }

  /** Writes bench/out/results.json and results.md. */
  write(): void {
    const esc = (s: string): string => s.replace(/\|/g, "\\|");
    const md = this.rows.map((r) => {
      const [value, floor] = [`${fmt(r.value)} ${r.unit}`, `${esc(r.floor)}: ${fmt(r.floorValue)}`];
      const target = `${targetOf(r)}${r.pass === undefined ? "" : r.pass ? " ✅" : " ❌"}`;
      return `| ${r.section} | ${esc(r.name)} | ${value} | ${floor} | ${r.ratio.toFixed(2)}× | ${target} |`;
    });
    const { date, cpu, node } = this.info;
    mkdirSync(OUT, { recursive: true });
    const json = JSON.stringify({ info: this.info, rows: this.rows, notes: this.notes }, null, 1);
    writeFileSync(join(OUT, "results.json"), `${json}\n`);
    writeFileSync(join(OUT, "results.md"), [
      `Measured ${date.slice(0, 10)} on ${cpu}, node ${node}. Ratio = cost relative to a floor measured in the same run.`,
      "",
      "| section | measure | value | floor | ratio | target |",
      "|---|---|---:|---|---:|---|",
      ...md,
      "",
    ].join("\n"));
  }
}

function targetOf(r: Row): string {
  const rate = (x: number): string => (r.unit.endsWith("/s") ? ` (≥ ${(1 / x).toFixed(2)}×)` : "");
  const t = (x: number): string => `≤ ${x.toFixed(2)}×${rate(x)}`;
  return r.target === undefined ? "" : r.later === undefined ? t(r.target) : `${t(r.target)}, later ${t(r.later)}`;
}

/** Three significant figures, thousands separated. */
export function fmt(x: number): string {
  const a = Math.abs(x);
  if (a >= 1000 || Number.isInteger(x) || !Number.isFinite(x)) return Number.isFinite(x) ? int(x) : String(x);
  return x.toFixed(a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3);
}
