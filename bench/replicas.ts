/**
 * The `replicas` section: Litestream beside the writer (bench/replicas-litestream.ts), a restore from its replica
 * (bench/replicas-restore.ts), then live replicas (`follow`)
 * of the mixed profile ×0.3 as a multi-store (SPEC §8), the source served by `iavlite serve`
 * in a process of its own:
 *
 * - Catching up: the writer commits a backlog of 500 versions (quick: 40) at full speed, alone, timed; then a
 *   replica that holds the initial load catches up with them from the service, alone (fetch, decode, apply many
 *   versions per transaction, hash check, commit), timed. Target: ≥ 1.5× the writer's rate (a replica that restarts
 *   behind must catch up with a writer at a chain's pace, and soon).
 * - Lag: a writer process commits 60 more versions (quick: 20) at a chain's pace, one a second, while the same
 *   replica, caught up and still following, keeps up; at each version the replica commits (durable, as it tells),
 *   how many versions the writer had committed beyond it, and how long after the writer's commit of that version.
 *   Targets: p99 ≤ 1 version and ≤ 500 ms.
 * - Answers: `iavlite serve` on the replica and on the source, asked the same 300 proven queries at heights both
 *   hold: any byte that differs counts. Target: 0.
 *
 * REPLICAS_BACKLOG=n and REPLICAS_PACED=n in the environment set the two counts (a shorter run on a busy machine).
 * @module
 */
import { cpSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { follow, MultiTree, toHex } from "../src/index.js";
import { Child, serverProcess } from "./child-process.js";
import type { Committed, ReplicaWriterJob } from "./replicas-child.js";
import { litestreamReplicas } from "./replicas-litestream.js";
import { litestreamRestore } from "./replicas-restore.js";
import { floorOf, type Bench } from "./report.js";
import { applyToTree, load, replay, rate, scaled, type Subject } from "./subjects.js";
import { int, percentile, sum } from "./timing.js";
import { MIXED, Rng, Workload } from "./workload.js";

const SEED = 25;
/**
 * Versions the writer process commits at its pace before the lag counts: its start (reopening the store replays the
 * versions since its last checkpoint) takes the machine's two cores from the service and the replica for a few
 * seconds, which a writer that has been running (a node) never does.
 */
const WARM_UP = 5;
const root = fileURLToPath(new URL("..", import.meta.url));

/** `iavlite serve dir` in a process of its own, once it listens. */
const serveProcess = (dir: string): ReturnType<typeof serverProcess> => serverProcess([join(root, "src/cli/main.ts"), "serve", dir, "--port", "0"]);

/** A multi-store as a bench subject. */
function multiSubject(m: MultiTree, names: readonly string[]): Subject {
  return { put: (i, c) => applyToTree(m.tree(names[i]!), c), commit: () => void m.commit(), close: () => m.close() };
}

export async function replicas(b: Bench): Promise<void> {
  await litestreamReplicas(b);
  await litestreamRestore(b);
  await liveReplicas(b);
}

/** Live replicas alone (`--only replicas-live`): catching up, lag at a chain's pace, answers. */
export async function liveReplicas(b: Bench): Promise<void> {
  const profiles = scaled(MIXED, { initialSize: 0.3 * 35_000 });
  const count = (name: string, quick: number, full: number): number => {
    const n = Number(process.env[name] ?? b.q(quick, full));
    if (!Number.isInteger(n) || n < 2) throw new Error(`bench: ${name} must be an integer of at least 2`);
    return n;
  };
  const [backlog, paced, asked] = [count("REPLICAS_BACKLOG", 40, 500), count("REPLICAS_PACED", 20, 60), b.q(100, 300)];
  const names = new Workload(profiles, SEED).storeNames;
  const dir = b.dir("replicas");
  const [src, replica] = [join(dir, "source"), join(dir, "replica")];

  b.log(`initial load, ${int(profiles[0]!.initialSize)} keys × ${names.length} stores; the replica starts as its copy`);
  const w = new Workload(profiles, SEED);
  let m = MultiTree.open(src, { stores: names });
  await load(w, [multiSubject(m, names)]);
  m.close();
  cpSync(src, replica, { recursive: true });

  b.log(`catching up: the writer commits ${backlog} versions alone, then the replica applies them alone`);
  m = MultiTree.open(src, { stores: names });
  const t = await replay(b, w, backlog, [multiSubject(m, names)]);
  const last = m.version;
  m.close();
  const source = await serveProcess(src);
  try {
    // One replica follows throughout, as it would in a node: it catches up with the backlog, then keeps up with the
    // writer at a chain's pace (a replica reopened between the two would time its own reopening as lag).
    const stop = new AbortController();
    let caughtUp!: () => void;
    const caught = new Promise<void>((r) => (caughtUp = r));
    const followed: Committed[] = [];
    const end = last + WARM_UP + paced;
    const t0 = process.hrtime.bigint();
    let applyNs = 0;
    const following = follow(source.url, replica, {
      signal: stop.signal,
      onNote: (n) => b.log(n),
      onVersion: (v) => {
        if (v <= last + WARM_UP) {
          if (v % 50 === 0) b.log(`  replica at ${v} of ${last}`);
          if (v === last) {
            applyNs = Number(process.hrtime.bigint() - t0);
            caughtUp();
          }
          return;
        }
        followed.push({ v, t: Date.now() });
        if (v >= end) stop.abort();
      },
    });
    await Promise.race([caught, following.then(() => Promise.reject(new Error("bench: the replica stopped before it caught up")))]);
    b.row(`replica catching up ${backlog} versions of the mixed profile ×0.3 (multi-store, ~${int(t.ops[0]!)} changes each): fetch, apply, hash check, commit`,
      sum(t.ops) / (applyNs / 1e9), "ops/s", floorOf("the writer's rate committing them alone", rate(t, 0)), {
        target: 1 / 1.5,
        note: "one after the other on the same machine; the replica in this process, the source's service in its own",
      });

    b.log(`lag: a writer process commits ${WARM_UP} + ${paced} more versions, one a second, while the same replica follows`);
    const writer = new Child("replica-writer", [src]);
    const commits: Committed[] = [];
    writer.send({ profiles, seed: SEED, versions: WARM_UP + paced, paceMs: 1_000 } satisfies ReplicaWriterJob);
    for (;;) {
      const c = await writer.ask<Committed | null>();
      if (c === null) break;
      commits.push(c);
    }
    writer.kill();
    await following;
    // At each version the replica committed: the writer's versions committed by then, beyond it; and how long after
    // the writer's own commit of it.
    const behind = followed.map((f) => commits.filter((c) => c.t <= f.t).length + last - f.v);
    const lagMs = followed.map((f) => f.t - commits.find((c) => c.v === f.v)!.t);
    const pace = `${paced} versions at one a second, after ${WARM_UP} not counted (the writer process starting); writer, source service and replica share the machine`;
    b.row(`replica lag behind a writer at a chain's pace, p99`, percentile(behind, 0.99), "versions", floorOf("1 version", 1), {
      target: 1,
      note: `max ${Math.max(...behind)} versions; ${pace}`,
    });
    b.row(`replica lag behind a writer at a chain's pace, p99 time after the writer's commit`, percentile(lagMs, 0.99), "ms", floorOf("500 ms", 500), {
      target: 1,
      note: `p50 ${percentile(lagMs, 0.5).toFixed(0)} ms, max ${Math.max(...lagMs).toFixed(0)} ms; ${pace}`,
    });

    b.log(`answers: ${asked} proven queries to both services`);
    const mirror = await serveProcess(replica);
    try {
      const rng = new Rng(SEED);
      let differ = 0;
      const keys = [...new Workload(profiles, SEED).initial()].filter((_, i) => i % 97 === 0);
      for (let i = 0; i < asked; i++) {
        const c = keys[rng.int(keys.length)]!;
        const path = `/v1/query?store=${c.store}&key=${toHex(c.key)}&height=${end - rng.int(20)}&prove=true`;
        const [x, y] = await Promise.all([source.url, mirror.url].map(async (u) => (await fetch(`${u}${path}`)).text()));
        if (x !== y) differ++;
      }
      b.row(`answers of a serve on the replica that differ from the source's (value, hashes, proofs)`, differ, "answers", floorOf(`${asked} proven queries at the last 20 heights`, asked), { target: 0 });
    } finally {
      mirror.proc.kill();
    }
  } finally {
    source.proc.kill();
  }
}
