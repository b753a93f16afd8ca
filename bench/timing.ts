/**
 * Timing and small helpers of the bench: nanosecond timers, timed batches of gets and rounds of them, quantiles and
 * sums, number formats, folder sizes and free disk, resident memory, a full GC between phases, and the GC share of timed windows.
 * @module
 */
import { existsSync, readdirSync, readFileSync, statfsSync, statSync } from "node:fs";
import { join } from "node:path";
import { PerformanceObserver } from "node:perf_hooks";
import { setImmediate as tick } from "node:timers/promises";

/** Nanoseconds `fn` takes. */
export function timeNs(fn: () => unknown): number {
  const t0 = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t0);
}

/** Nanoseconds `fn` takes, awaiting what it returns. */
export async function timeNsAsync(fn: () => unknown): Promise<number> {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0);
}

/** Nanoseconds per call of `get` over `keys`; every key must be found. */
export function nsPerGet<K>(keys: readonly K[], get: (k: K) => unknown): number {
  let found = 0;
  const ns = timeNs(() => keys.forEach((k) => (found += get(k) === undefined ? 0 : 1)));
  if (found !== keys.length) throw new Error("bench: a get of a live key found nothing");
  return ns / keys.length;
}

/**
 * `warm + rounds` rounds of the timed sides `round(i)` gives, rotated so that no side always runs right after
 * another's cache misses: what each side returns after the first `warm` rounds, by side.
 */
export async function rotated(
  rounds: number,
  warm: number,
  round: (i: number) => ReadonlyArray<() => number | Promise<number>>,
): Promise<number[][]> {
  const r: number[][] = [];
  for (let i = 0; i < warm + rounds; i++) {
    const sides = round(i);
    for (let j = 0; j < sides.length; j++) {
      const k = (i + j) % sides.length;
      const x = await sides[k]!();
      if (i >= warm) (r[k] ??= []).push(x);
    }
  }
  return r;
}

/** The `p`-quantile of `xs`, linear between order statistics. */
export function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  const at = p * (s.length - 1);
  const lo = Math.floor(at);
  return s[lo]! + (s[Math.ceil(at)]! - s[lo]!) * (at - lo);
}

/** The median of `xs`. */
export const median = (xs: readonly number[]): number => percentile(xs, 0.5);
/** The sum of `xs`. */
export const sum = (xs: readonly number[]): number => xs.reduce((a, x) => a + x, 0);
/** `bytes` in MiB. */
export const mib = (bytes: number): number => bytes / 2 ** 20;
/** `n` rounded, thousands separated. */
export const int = (n: number): string => Math.round(n).toLocaleString("en-US");
/** A full collection between phases (the bench runs with --expose-gc). */
export const gc = (): void => globalThis.gc?.();
/** Keeps a result alive so that the optimiser cannot drop the work that made it. */
const sink: unknown[] = [undefined];
export const consume = (x: unknown): void => void (sink[0] = x);

/** Bytes of the files under `path` (or of the file); 0 when missing. */
export function bytesOf(path: string): number {
  if (!existsSync(path)) return 0;
  return statSync(path).isDirectory() ? sum(readdirSync(path).map((f) => bytesOf(join(path, f)))) : statSync(path).size;
}

/** Throws when the disk holding `path` has less than `gib` GiB free: a long run stops before it fills a shared disk. */
export function checkFree(path: string, gib = 10): void {
  const s = statfsSync(path);
  if (s.bavail * s.bsize < gib * 2 ** 30) throw new Error(`bench: under ${gib} GiB free on the disk of ${path}; stopped before it fills`);
}

/** Resident memory in MiB from /proc/self/status: all of it, anonymous (heap), and mapped files. */
export interface Rss {
  rss: number;
  anon: number;
  file: number;
}

/** This process's resident memory now. */
export function rss(): Rss {
  const text = readFileSync("/proc/self/status", "utf8");
  const kib = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+)`, "m").exec(text)?.[1]);
  return { rss: kib("VmRSS") / 1024, anon: kib("RssAnon") / 1024, file: kib("RssFile") / 1024 };
}

/** Records 'gc' performance entries, to tell what share of some timed windows went to garbage collection. */
export class GcWatch {
  private readonly entries: Array<{ startTime: number; duration: number }> = [];
  private readonly obs = new PerformanceObserver((list) => this.entries.push(...list.getEntries()));

  constructor() {
    this.obs.observe({ entryTypes: ["gc"] });
  }

  /** GC time that started inside the windows ([start, end], performance.now() ms) over their total length. */
  async share(windows: ReadonlyArray<readonly [number, number]>): Promise<number> {
    await tick();
    this.entries.push(...this.obs.takeRecords());
    this.obs.disconnect();
    const inside = this.entries.filter((e) => windows.some(([a, b]) => e.startTime >= a && e.startTime <= b));
    return sum(inside.map((e) => e.duration)) / sum(windows.map(([a, b]) => b - a));
  }
}
