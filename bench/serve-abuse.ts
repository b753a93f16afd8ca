/**
 * The query service against clients that misbehave (`npm run bench -- --only serve-abuse`): a real `iavlite serve`
 * child on a store of a few tens of MiB, on loopback. First, with the service's default bounds, stalled readers
 * (each reads the first chunk of `/v1/ops`, `/v1/snapshot` or `/v1/changes`, then never reads again), slowloris
 * connections (a header byte a second) and idle sockets all at once; then the same stalled readers with the cap on
 * streams raised past their number, so that every one is a stream held open (what backpressure alone bounds); then a
 * steady query load (autocannon, `/v1/query` with proofs and `abci_query`). Throughout, the service's RSS is read
 * from /proc/PID/status and `/v1/status` is asked for every 100 ms: the rows are the peak RSS above idle, whether it
 * stays flat, the p99 of `/v1/status`, and errors. Counts and times are bounded; nothing leaves 127.0.0.1.
 * @module
 */
import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import http from "node:http";
import { monitorEventLoopDelay } from "node:perf_hooks";
import net from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { toHex, Tree } from "../src/index.js";
import { serverProcess } from "./child-process.js";
import { floorOf, type Bench } from "./report.js";
import { int, percentile } from "./timing.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const MiB = 2 ** 20;
const VALUE_BYTES = 16_384;
const KEYS_PER_VERSION = 8;

/** RSS of process `pid`, bytes (VmRSS in /proc/PID/status). */
function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m === null ? Number.NaN : Number(m[1]) * 1024;
}

/** Samples `pid`'s RSS and `/v1/status`'s latency until stopped. */
class Watch {
  readonly rss: Array<{ t: number; bytes: number }> = [];
  readonly status: number[] = [];
  /** When (s after the start) `/v1/status` took over 100 ms, and how long. */
  readonly slow: Array<[number, number]> = [];
  statusErrors = 0;
  private readonly t0 = performance.now();
  /** This process's own event-loop delay: a slow answer that is the bench's, not the service's, shows here. */
  readonly lag = monitorEventLoopDelay({ resolution: 10 });
  private stopped = false;
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

  constructor(pid: number, private readonly url: string) {
    this.lag.enable();
    this.timers.push(setInterval(() => this.rss.push({ t: performance.now(), bytes: rssOf(pid) }), 200));
    this.timers.push(setInterval(() => void this.ask(), 100));
  }

  /**
   * A Watch whose one connection to the service is open before it starts: a health checker keeps its connection (a
   * new one, under hundreds of connects at once, waits on the listen backlog, not on the service); an answer late
   * past the next ask delays that one too, so a stuck service still shows.
   */
  static async start(pid: number, url: string): Promise<Watch> {
    const w = new Watch(pid, url);
    await w.ask();
    w.status.length = 0;
    return w;
  }

  private async ask(): Promise<void> {
    if (this.stopped) return;
    const t = performance.now();
    const ok = await new Promise<boolean>((resolve) => {
      const req = http.get(`${this.url}/v1/status`, { agent: this.agent, timeout: 10_000 }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode === 200));
        res.on("error", () => resolve(false));
      });
      req.on("timeout", () => req.destroy());
      req.on("error", () => resolve(false));
    });
    if (this.stopped) return;
    const ms = performance.now() - t;
    if (ok) this.status.push(ms);
    else this.statusErrors++;
    if (ms > 100) this.slow.push([(t - this.t0) / 1000, ms]);
  }

  /** The slow answers, for a note: when and how long. */
  get slowNote(): string {
    return this.slow.length === 0 ? "none over 100 ms" : `over 100 ms: ${this.slow.slice(0, 12).map(([at, ms]) => `${int(ms)} ms at ${at.toFixed(1)} s`).join(", ")}${this.slow.length > 12 ? ", …" : ""}`;
  }

  stop(): void {
    this.stopped = true;
    this.lag.disable();
    for (const t of this.timers) clearInterval(t);
    this.agent.destroy();
  }

  /** Peak RSS, bytes. */
  get peak(): number {
    return Math.max(...this.rss.map((s) => s.bytes));
  }

  /** Peak RSS of the last third of the samples less that of the middle third: ~0 when flat, bytes. */
  get growth(): number {
    const n = this.rss.length;
    const max = (a: number, b: number): number => Math.max(...this.rss.slice(a, b).map((s) => s.bytes));
    return max(Math.floor((2 * n) / 3), n) - max(Math.floor(n / 3), Math.floor((2 * n) / 3));
  }
}

/** Sockets the bench opened, each closed at the end of its phase. */
class Crowd {
  readonly sockets: net.Socket[] = [];
  /** Answers' status codes by route, for stalled readers. */
  readonly statuses = new Map<string, Map<number, number>>();
  /** Connections the service closed (seen by the ones still read: slowloris and idle). */
  closedByService = 0;

  constructor(private readonly port: number) {}

  private open(): net.Socket {
    const s = net.connect(this.port, "127.0.0.1");
    s.on("error", () => {});
    this.sockets.push(s);
    return s;
  }

  /** A GET of `path` whose answer is read up to its first chunk, then no more. */
  stalled(path: string): Promise<void> {
    return new Promise((resolve) => {
      const s = this.open();
      s.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      s.once("data", (d: Buffer) => {
        s.pause();
        const code = Number(d.toString("latin1", 9, 12));
        const route = path.split("?")[0]!;
        const byCode = this.statuses.get(route) ?? new Map<number, number>();
        byCode.set(code, (byCode.get(code) ?? 0) + 1);
        this.statuses.set(route, byCode);
        resolve();
      });
      s.once("close", () => resolve());
    });
  }

  /** A request whose headers arrive a byte a second, never whole. */
  slowloris(): void {
    const s = this.open();
    const head = `GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ${"a".repeat(10_000)}`;
    let i = 0;
    const timer = setInterval(() => (s.writable ? s.write(head[i++ % head.length]!) : clearInterval(timer)), 1000);
    s.resume();
    s.once("close", () => (clearInterval(timer), this.closedByService++));
  }

  /** A connection that sends nothing. */
  idle(): void {
    const s = this.open();
    s.resume();
    s.once("close", () => this.closedByService++);
  }

  close(): void {
    for (const s of this.sockets) s.destroy();
  }
}

/** Resolves after `ms` (the length of a phase: the bench holds the load that long). */
const hold = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Opens `n` at a time of `make()`, all of `count`. */
async function inBatches(count: number, n: number, make: () => Promise<void>): Promise<void> {
  for (let i = 0; i < count; i += n) await Promise.all(Array.from({ length: Math.min(n, count - i) }, make));
}

export async function serveAbuse(b: Bench): Promise<void> {
  const versions = b.q(100, 300);
  const stalledEach = b.q(100, 400);
  const changesStalled = b.q(25, 100);
  const slow = b.q(50, 200);
  const idle = b.q(100, 500);
  const holdMs = b.q(5_000, 20_000);
  const loadS = b.q(10, 60);
  const connections = 50;

  const dir = join(b.dir("serve-abuse"), "bank");
  b.log(`a store of ${versions} versions × ${KEYS_PER_VERSION} values of ${VALUE_BYTES / 1024} KiB`);
  const t = Tree.open(dir);
  const value = new Uint8Array(VALUE_BYTES);
  const keys: Uint8Array[] = [];
  for (let v = 1; v <= versions; v++) {
    for (let k = 0; k < KEYS_PER_VERSION; k++) {
      value.fill((v * 31 + k) & 0xff);
      const key = new TextEncoder().encode(`key-${v}-${k}`);
      keys.push(key);
      t.set(key, value);
    }
    t.commit();
  }
  t.close();
  const storeMiB = (versions * KEYS_PER_VERSION * VALUE_BYTES) / MiB;

  const phases = async (name: string, flags: string[], run: (url: string, proc: ChildProcess) => Promise<void>): Promise<void> => {
    const srv = await serverProcess([join(root, "src/cli/main.ts"), "serve", dir, "--port", "0", ...flags]);
    try {
      await run(srv.url, srv.proc);
    } finally {
      srv.proc.kill("SIGTERM");
      await new Promise((r) => srv.proc.once("exit", r));
    }
    b.log(`${name}: done`);
  };

  /** Warms the service up (a full snapshot and ops read, some queries), then its idle RSS, bytes. */
  const idleRss = async (url: string, pid: number): Promise<number> => {
    await (await fetch(`${url}/v1/snapshot`)).arrayBuffer();
    await (await fetch(`${url}/v1/ops?from=1&to=${versions}`)).arrayBuffer();
    await autocannon({ url, connections: 4, amount: 2000, requests: queryRequests(keys) });
    await hold(1000);
    return rssOf(pid);
  };

  const stalledPhase = async (label: string, flags: string[], capped: boolean): Promise<void> => {
    await phases(label, flags, async (url, proc) => {
      const pid = proc.pid!;
      const idleBytes = await idleRss(url, pid);
      const started = performance.now();
      const watch = await Watch.start(pid, url);
      const crowd = new Crowd(Number(new URL(url).port));
      let opened = Number.NaN;
      try {
        if (capped) {
          for (let i = 0; i < slow; i++) crowd.slowloris();
          for (let i = 0; i < idle; i++) crowd.idle();
        }
        b.log(`${label}: ${stalledEach} stalled readers on /v1/ops and on /v1/snapshot, ${changesStalled} on /v1/changes`);
        await inBatches(stalledEach, 50, () => crowd.stalled(`/v1/ops?from=1&to=${versions}`));
        await inBatches(stalledEach, 50, () => crowd.stalled("/v1/snapshot"));
        await inBatches(changesStalled, 25, () => crowd.stalled(`/v1/changes?from=1&to=${versions}`));
        opened = (performance.now() - started) / 1000;
        await hold(holdMs);
      } finally {
        watch.stop();
        crowd.close();
      }
      const answered = [...crowd.statuses].map(([route, m]) => `${route} ${[...m].map(([c, n]) => `${n}×${c}`).join(" ")}`).join(", ");
      const status = percentile(watch.status, 0.99);
      b.row(`${label}: service RSS above idle, ${stalledEach} + ${stalledEach} + ${changesStalled} stalled readers`, (watch.peak - idleBytes) / MiB, "MiB",
        floorOf("the issue's bound, 300 MiB", 300), {
          // Uncapped is context: what backpressure alone holds, each stalled stream a stream.
          ...(capped ? { target: 1 } : {}),
          note: `idle ${int(idleBytes / MiB)} MiB, store ${int(storeMiB)} MiB; growth over the last third ${((watch.growth) / MiB).toFixed(1)} MiB; answers: ${answered}${capped ? `; with ${slow} slowloris and ${idle} idle sockets (${crowd.closedByService} closed by the service)` : ""}`,
        });
      b.row(`  /v1/status p99 meanwhile`, status, "ms", floorOf("the issue's bound, 100 ms", 100), {
        ...(capped ? { target: 1 } : {}),
        note: `${watch.status.length} asked, ${watch.statusErrors} failed or timed out (10 s), max ${Math.max(...watch.status).toFixed(1)} ms; ${watch.slowNote}; the readers were opened ${opened.toFixed(1)} s after the start; the bench's own event loop was held up to ${int(watch.lag.max / 1e6)} ms`,
      });
      if (watch.statusErrors > 0) b.note(`${label}: ${watch.statusErrors} /v1/status requests failed`);
    });
  };

  await stalledPhase("default bounds", [], true);
  await stalledPhase("streams uncapped", ["--max-streams", String(3 * stalledEach)], false);

  await phases("query load", [], async (url, proc) => {
    const pid = proc.pid!;
    const idleBytes = await idleRss(url, pid);
    b.log(`query load: ${connections} connections, ${loadS} s, /v1/query?prove=true and abci_query`);
    const watch = await Watch.start(pid, url);
    let r: autocannon.Result;
    try {
      r = await autocannon({ url, connections, duration: loadS, requests: queryRequests(keys) });
    } finally {
      watch.stop();
    }
    const errors = r.non2xx + r.errors + r.timeouts;
    b.row(`query load, ${connections} connections, ${loadS} s: p99`, r.latency.p99, "ms", floorOf("/v1/status p99 meanwhile", percentile(watch.status, 0.99)), {
      note: `context: ${int(r.requests.total)} answers (${int(r.requests.average)}/s), ${errors} errors (${r.non2xx} not 2xx, ${r.errors} failed, ${r.timeouts} timed out); RSS above idle at peak ${((watch.peak - idleBytes) / MiB).toFixed(1)} MiB, growth over the last third ${(watch.growth / MiB).toFixed(1)} MiB`,
    });
    b.row("  RSS above idle under that load", (watch.peak - idleBytes) / MiB, "MiB", floorOf("the issue's bound, 300 MiB", 300), { target: 1 });
    if (errors > 0) throw new Error(`bench: ${errors} query answers under load were errors`);
  });
}

/** `/v1/query` with proofs and `abci_query` (URI form) on keys of the store, alternately. */
function queryRequests(keys: Uint8Array[]): Array<{ method: "GET"; path: string }> {
  return Array.from({ length: 200 }, (_, i) => {
    const key = toHex(keys[(i * 7919) % keys.length]!);
    const path = i % 2 === 0 ? `/v1/query?key=${key}&prove=true` : `/abci_query?path="/store/bank/key"&data=0x${key}&prove=true`;
    return { method: "GET" as const, path };
  });
}
