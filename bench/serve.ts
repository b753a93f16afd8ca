/**
 * The query service under load: `iavlite serve` answering `/v1/query?prove=true` (value, store proof, app proof) to
 * autocannon on localhost while a writer process commits the mixed profile (values ÷10, changes ÷4) to the same
 * multi-store, a version every 200 ms as blocks come.
 * Floors from the same run: the same reads and store proofs made in-process through `Tree.openReadOnly` while the
 * same writer commits (the service's rate), the same route on bare node:http (what fastify costs), and the writer
 * alone (the writer's rate under load). Each phase starts from an identical copy of the loaded stores.
 *
 * The main figures read a fixed height (the newest version when the writer starts, as a client asks about a height
 * it was told of). Context rows read the newest version instead, which the writer moves five times a second: there
 * each new version's tree is rebuilt once per store before its proofs, replaying the versions since the last
 * checkpoint (every 4 versions here).
 * @module
 */
import { fork, type ChildProcess } from "node:child_process";
import { cpSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { setImmediate as tick } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { ics23, iavlSpec, tendermintSpec, verifyMembership, verifyNonMembership } from "@confio/ics23";
import autocannon from "autocannon";
import { fromHex, MultiTree, toHex, Tree } from "../src/index.js";
import { serverProcess } from "./child-process.js";
import { floorOf, type Bench } from "./report.js";
import { applyToTree, load, scaled } from "./subjects.js";
import { int, percentile, sum } from "./timing.js";
import { MIXED, Rng, Workload } from "./workload.js";

/** What the writer child reports. */
export interface WriterResult {
  ops: number;
  /** Time of each version's set/remove + commit, ns. */
  ns: number[];
}

/** The workload of the serve bench: the mixed profile, values ÷10 and changes per version ÷4. */
export const serveProfiles = (initialSize: number): ReturnType<typeof scaled> => scaled(MIXED, { initialSize, values: 10, ops: 4 });

/** The writer commits a version every PACE_MS, as blocks come (a chain's are seconds apart). */
const PACE_MS = 200;

/** Checkpoint interval of the bench's stores: a reader's proof of the newest version replays at most this many. */
export const SERVE_CHECKPOINT = 4;

const SEED = 1207;
/** Versions committed after the initial load, before the phases start. */
const PRE = 3;
const CONNECTIONS = 4;

/** Which version the queries read. */
type At = "fixed" | "latest";
const root = fileURLToPath(new URL("..", import.meta.url));
const childScript = fileURLToPath(new URL("./serve-child.ts", import.meta.url));

/** A forked bench/serve-child.ts, talking over IPC. */
class ServeChild {
  readonly proc: ChildProcess;
  private readonly inbox: unknown[] = [];
  private wake: (() => void) | undefined;
  private exit: Error | undefined;

  constructor(args: string[]) {
    this.proc = fork(childScript, args, { cwd: root, execArgv: ["--import", "tsx"], serialization: "advanced", stdio: ["ignore", "inherit", "inherit", "ipc"] });
    this.proc.on("message", (m) => (this.inbox.push(m), this.wake?.()));
    this.proc.on("exit", (code) => ((this.exit = new Error(`bench: serve child exited with ${code}`)), this.wake?.()));
  }

  async next<T>(): Promise<T> {
    while (this.inbox.length === 0) {
      if (this.exit !== undefined) throw this.exit;
      await new Promise<void>((r) => (this.wake = r));
    }
    return this.inbox.shift() as T;
  }
}

interface Load {
  queries: number;
  seconds: number;
  p99ms: number;
  failed: number;
  /** CPU time of the answering process over the window, s (NaN where /proc is not there). */
  cpu: number;
}

/** CPU time process `pid` has used, s, from /proc (NaN elsewhere). */
function cpuOf(pid: number): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

/** Warms the server up (JIT, page cache), then runs autocannon on `paths` from `go()` until what it returns resolves. */
async function cannon(url: string, pid: number, paths: string[], go: () => Promise<unknown>): Promise<Load> {
  const requests = paths.map((path) => ({ method: "GET" as const, path }));
  await autocannon({ url, connections: CONNECTIONS, amount: 1000, requests });
  let inst: autocannon.Instance | undefined;
  const result = new Promise<autocannon.Result>((resolve, reject) => {
    inst = autocannon({ url, connections: CONNECTIONS, duration: 3600, requests }, (err: unknown, r: autocannon.Result) => (err ? reject(err) : resolve(r)));
  });
  const cpu0 = cpuOf(pid);
  await go();
  const cpu = cpuOf(pid) - cpu0;
  inst!.stop();
  const r = await result;
  return { queries: r["2xx"], seconds: (r.finish.getTime() - r.start.getTime()) / 1000, p99ms: r.latency.p99, failed: r.non2xx + r.errors, cpu };
}

export async function serve(b: Bench): Promise<void> {
  const versions = b.q(15, 50);
  const initialSize = b.q(5_000, 35_000);
  const dir = b.dir("serve");
  const template = join(dir, "template");

  b.log(`loading the mixed profile (values ÷10, changes ÷4), ${int(initialSize)} keys × 3 stores, then ${PRE} versions`);
  const w = new Workload(serveProfiles(initialSize), SEED);
  const names = w.storeNames;
  const m = MultiTree.open(template, { stores: names, checkpointInterval: SERVE_CHECKPOINT });
  await load(w, [{ put: (i, c) => applyToTree(m.tree(names[i]!), c), commit: () => void m.commit(), close: () => undefined }]);
  for (let v = 0; v < PRE; v++) {
    for (const c of w.nextVersion()) applyToTree(m.tree(c.store), [c]);
    m.commit();
  }
  m.close();
  // The queries: live keys of each store (some will be deleted by the writer meanwhile) and a tenth absent ones.
  const rng = new Rng(SEED);
  const queries = Array.from({ length: 3000 }, (_, i) => {
    const store = names[i % names.length]!;
    const live = w.liveKeys(store);
    const key = i % 10 === 9 ? Uint8Array.from({ length: 24 }, () => rng.int(256)) : live[rng.int(live.length)]!;
    return { store, s: i % names.length, key };
  });
  // "fixed": the version that was the newest when the writer started (a height a client was told about); "latest":
  // no height, so each answer is at the newest version, which the writer keeps moving.
  const FIXED = PRE + 1;
  const pathsAt = (at: At): string[] =>
    queries.map((q) => `/v1/query?store=${q.store}&key=${toHex(q.key)}&prove=true${at === "fixed" ? `&height=${FIXED}` : ""}`);

  type Phase = { writer: number; load?: Load };
  const phase = async (mode: "alone" | "fastify" | "node:http" | "in-process", at: At = "fixed"): Promise<Phase> => {
    const what = mode === "alone" ? "writer alone" : mode === "in-process" ? "in-process reads" : `${mode} under autocannon`;
    b.log(`${versions} versions, ${what}${mode === "alone" ? "" : `, ${at} height, beside the writer`}`);
    const d = join(dir, `${mode.replace(":", "-")}-${at}`);
    cpSync(template, d, { recursive: true });
    const writer = new ServeChild(["writer", d, String(SEED), String(initialSize), String(PRE), String(versions), String(PACE_MS)]);
    await writer.next(); // ready
    let srv: { proc: ChildProcess; url: string } | undefined;
    try {
      if (mode === "fastify") srv = await serverProcess([join(root, "src/cli/main.ts"), "serve", d, "--port", "0"]);
      if (mode === "node:http") srv = await serverProcess([childScript, "plain-http", d]);
      let done: Promise<WriterResult> | undefined;
      const go = (): Promise<WriterResult> => {
        writer.proc.send("go");
        return (done = writer.next<WriterResult>());
      };
      let load: Load | undefined;
      if (srv !== undefined) load = await cannon(srv.url, srv.proc.pid!, pathsAt(at), go);
      else if (mode === "in-process") load = await inProcess(d, names, queries, at === "fixed" ? FIXED : undefined, go);
      else void go();
      const r = await done!;
      if (srv !== undefined) await check(srv.url, queries.slice(0, 30), FIXED);
      return { writer: r.ops / (sum(r.ns) / 1e9), load };
    } finally {
      srv?.proc.kill("SIGTERM");
      writer.proc.kill();
    }
  };
  const alone = await phase("alone");
  const served = await phase("fastify");
  const plain = await phase("node:http");
  const local = await phase("in-process");
  const following = await phase("fastify", "latest");
  const localFollowing = await phase("in-process", "latest");

  const qps = (x: Load | undefined): number => x!.queries / x!.seconds;
  const p99 = (x: Load | undefined): string => `${x!.p99ms.toFixed(2)} ms`;
  const [l, pl, lo] = [served.load!, plain.load!, local.load!];
  b.row(`/v1/query?prove=true at a fixed height, HTTP, ${CONNECTIONS} connections, while the writer commits`, qps(l), "queries/s",
    floorOf("the same reads + store proofs in-process (Tree.openReadOnly), same writer", qps(lo)), {
      target: 2,
      note: `${int(l.queries)} answers, ${l.failed} not 2xx; in-process ${int(lo.queries)} reads + proofs`,
    });
  const perAnswer = (x: Load): number => (x.cpu / x.queries) * 1e6;
  if (Number.isFinite(l.cpu)) {
    b.row("  CPU per answer of the service process", perAnswer(l), "µs", floorOf("CPU per read + proof in-process", perAnswer(lo)), {
      note: `context: the cost per answer whatever share of the cores each side got; the service used ${(l.cpu / l.seconds).toFixed(2)} of a core, the in-process loop ${(lo.cpu / lo.seconds).toFixed(2)}`,
    });
  }
  b.row("  p99 latency of those answers", l.p99ms, "ms", floorOf("p99 of one in-process read + proof", lo.p99ms), {
    note: `context: ${CONNECTIONS} requests in flight queue behind one another on one event loop`,
  });
  b.row("  the same route on bare node:http (what fastify costs)", qps(l), "queries/s", floorOf("node:http, JSON.stringify, no schemas or hooks", qps(pl)), {
    note: `context; node:http p99 ${p99(pl)}`,
  });
  const fl = following.load!;
  b.row("/v1/query?prove=true at the latest version, which the writer moves", qps(fl), "queries/s",
    floorOf("the same in-process, same writer", qps(localFollowing.load)), {
      note: `context: each new version's tree is rebuilt once per store (replaying up to ${SERVE_CHECKPOINT - 1} versions); p99 ${p99(fl)}, in-process p99 ${p99(localFollowing.load)}`,
    });
  const floor = floorOf("writer alone, same versions, same store copy", alone.writer);
  b.row(`writer, ${versions} versions one per ${PACE_MS} ms, with the service under load`, served.writer, "ops/s", floor, {
    target: 1 / 0.7,
    note: "ops over the time of set/remove + commit, the rest of each block idle",
  });
  b.row("  with the in-process reads", local.writer, "ops/s", floor, { note: "context" });
  b.row("  with the node:http floor under load", plain.writer, "ops/s", floor, { note: "context" });
  b.row("  with the service under load at the latest version", following.writer, "ops/s", floor, { note: "context" });
  const failed = l.failed + pl.failed + fl.failed;
  if (failed > 0) throw new Error(`bench: ${failed} answers were not 2xx`);
}

/**
 * The reads and proofs of `queries` at `height` (default: the newest version), in a loop through one
 * `Tree.openReadOnly` per store: 1000 to warm up, then from `go()` until what it returns resolves.
 */
async function inProcess(
  dir: string,
  names: string[],
  queries: Array<{ s: number; key: Uint8Array }>,
  height: number | undefined,
  go: () => Promise<unknown>,
): Promise<Load> {
  const readers = names.map((n) => Tree.openReadOnly(join(dir, "stores", n)));
  let stop = false;
  let latencies: number[] = [];
  let latest = 0;
  let refreshed = -Infinity;
  let n = 0;
  let busy = 0;
  let t0 = performance.now();
  let cpu0 = process.cpuUsage();
  let started = false;
  while (!stop) {
    if (!started && n >= 1000) {
      started = true;
      void go().then(() => (stop = true));
      [latencies, n, t0, cpu0] = [[], 0, performance.now(), process.cpuUsage()];
    }
    for (let j = 0; j < 50; j++, n++) {
      const t = performance.now();
      // As the service does: the newest version every store holds, looked for at most every 20 ms.
      if (t - refreshed >= 20) {
        latest = Math.min(...readers.map((r) => r.refresh()));
        refreshed = t;
      }
      const q = queries[n % queries.length]!;
      const view = readers[q.s]!.at(height ?? latest);
      view.get(q.key);
      void view.hash;
      view.proof(q.key);
      latencies.push(performance.now() - t);
    }
    busy = performance.now() - t0;
    // Between batches the writer's messages are read, as a server's event loop reads sockets.
    await tick();
  }
  const used = process.cpuUsage(cpu0);
  readers.forEach((r) => r.close());
  return { queries: n, seconds: busy / 1000, p99ms: percentile(latencies, 0.99), failed: 0, cpu: (used.user + used.system) / 1e6 };
}

/** A few answers of the service at `height`, checked: both proofs verify with @confio/ics23. */
async function check(url: string, queries: Array<{ s: number; key: Uint8Array }>, height: number): Promise<void> {
  const names = ["bank", "lockup", "staking"];
  for (const q of queries) {
    const r = (await (await fetch(`${url}/v1/query?store=${names[q.s]}&key=${toHex(q.key)}&prove=true&height=${height}`)).json()) as {
      value: string | null;
      storeHash: string;
      appHash: string;
      proof: { store: string; app: string };
    };
    const p = ics23.CommitmentProof.decode(fromHex(r.proof.store));
    const root = fromHex(r.storeHash);
    const ok = r.value === null ? verifyNonMembership(p, iavlSpec, root, q.key) : verifyMembership(p, iavlSpec, root, q.key, fromHex(r.value));
    const app = verifyMembership(ics23.CommitmentProof.decode(fromHex(r.proof.app)), tendermintSpec, fromHex(r.appHash), new TextEncoder().encode(names[q.s]), root);
    if (!ok || !app) throw new Error(`bench: a proof of ${names[q.s]} ${toHex(q.key)} did not verify`);
  }
}
