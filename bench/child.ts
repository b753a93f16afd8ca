/**
 * Bench child processes (see `Child` in bench/child-process.ts), talking to the bench over IPC:
 *
 * - `grow <dir> <durability>`: a store alone in its process, so that the RSS measured is the store's and not the
 *   bench's (the workload generator's live keys, the floors' page caches). Each message is one version's changes:
 *   it applies and commits them and answers the set/remove + commit time in ns, sampling RSS after the set/remove
 *   and after the commit. `null` ends the run with a {@link GrowResult}.
 * - `reader <dir> <seed> <store>...`: reads in a loop, `at(v).get(key)` through `Tree.openReadOnly`, of the facts the
 *   writer sends after each commit (a key's value hash at a version, or null when deleted), checking every read. One
 *   batch in ten reads the writer's plain versioned tables instead (both layouts in turn): the floor. `"stop"` ends
 *   it with a {@link ReaderResult}.
 * - `scale <dir> <perVersion>` and `scale-export <dir> <version>`: the scale section's store and its exporter beside
 *   it (bench/scale-child.ts).
 * - `replica-writer <dir>`: the replicas section's writer (bench/replicas-child.ts).
 * @module
 */
import { hash } from "node:crypto";
import { join } from "node:path";
import { setImmediate as tick } from "node:timers/promises";
import type { Statement } from "better-sqlite3";
import { Tree, type OpenOptions } from "../src/index.js";
import { layoutFile, LAYOUTS, plainDb, type Layout } from "./floors.js";
import { replicaWriter } from "./replicas-child.js";
import { scaleRole } from "./scale-child.js";
import { peakRssNow, timedCommit, type PeakRss } from "./subjects.js";
import { Rng, type Change } from "./workload.js";

export interface GrowResult extends PeakRss {
  latest: number;
  size: number;
}

/** A checkable read: in store `s`, key `k` holds at version `v` a value whose sha256 (hex) is `h`, or none. */
export interface Fact {
  s: number;
  k: Uint8Array;
  v: number;
  h: string | null;
}

export interface ReaderResult {
  reads: number;
  ms: number;
  /** The floor's reads and their time, per layout. */
  plain: Record<Layout, { reads: number; ms: number }>;
  mismatches: number;
  errors: number;
  firstError?: string;
}

const send = (m: unknown): void => void process.send!(m as object);

function grow(dir: string, durability: OpenOptions["durability"]): void {
  const tree = Tree.open(dir, { durability });
  const r: GrowResult = { latest: 0, size: 0, ...peakRssNow() };
  let busy = Promise.resolve();
  process.on("message", (m) => {
    const changes = m as Change[] | null;
    busy = busy.then(async () => {
      if (changes === null) {
        await tree.flush();
        Object.assign(r, { latest: tree.version, size: tree.size });
        tree.close();
        return void (send(r), process.disconnect());
      }
      send(timedCommit(tree, changes, r));
    });
  });
}

async function reader(dir: string, seed: number, stores: string[]): Promise<void> {
  const trees = stores.map((s) => Tree.openReadOnly(join(dir, s)));
  const newest = "SELECT value FROM kv WHERE key = ? AND version <= ? ORDER BY version DESC LIMIT 1";
  const open = (s: string, l: Layout): Statement => plainDb(layoutFile(dir, `plain-${s}`, l), true).prepare(newest).pluck();
  const plains = LAYOUTS.map((l) => stores.map((s) => open(s, l)));
  const facts: Fact[] = [];
  let stop = false;
  process.on("message", (m) => (m === "stop" ? (stop = true) : facts.push(...(m as Fact[]))));
  process.on("disconnect", () => (stop = true));
  while (facts.length === 0) await tick();
  send("ready");
  const none = (): { reads: number; ms: number } => ({ reads: 0, ms: 0 });
  const r: ReaderResult = { ...none(), plain: { rowid: none(), "without rowid": none() }, mismatches: 0, errors: 0 };
  const rng = new Rng(seed);
  const got: Array<Uint8Array | undefined> = [];
  for (let batch = 0; !stop; batch++) {
    const picked = Array.from({ length: 100 }, () => facts[rng.int(facts.length)]!);
    const floor = batch % 10 !== 9 ? -1 : batch % 20 === 9 ? 0 : 1; // a tenth of the batches: each layout in turn
    const t0 = performance.now();
    picked.forEach((f, i) => {
      try {
        const plain = (): Uint8Array | undefined => (plains[floor]![f.s]!.get(f.k, f.v) as Uint8Array | null) ?? undefined;
        got[i] = floor < 0 ? trees[f.s]!.at(f.v).get(f.k) : plain();
      } catch (e) {
        r.errors++;
        r.firstError ??= e instanceof Error ? e.message : String(e);
        got[i] = undefined;
      }
    });
    const into = floor < 0 ? r : r.plain[LAYOUTS[floor]!];
    into.ms += performance.now() - t0;
    into.reads += picked.length;
    picked.forEach((f, i) => (r.mismatches += f.h === (got[i] === undefined ? null : hash("sha256", got[i], "hex")) ? 0 : 1));
    await tick();
  }
  for (const t of trees) t.close();
  send(r);
  process.disconnect();
}

const [role, dir, ...rest] = process.argv.slice(2);
if (role === "grow") grow(dir!, rest[0] as OpenOptions["durability"]);
else if (role === "reader") await reader(dir!, Number(rest[0]), rest.slice(1));
else if (role === "scale" || role === "scale-export") await scaleRole(role, dir!, rest[0]!);
else if (role === "replica-writer") await replicaWriter(dir!);
else throw new Error(`bench child: unknown role ${role}`);
