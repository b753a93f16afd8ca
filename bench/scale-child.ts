/**
 * The scale section's child processes (bench/scale.ts), started through bench/child.ts:
 *
 * - `scale <dir> <perVersion>`: the store, alone in its process so that the RSS measured is its own. Each version is
 *   built here from its number (bench/scale-data.ts). It answers each {@link ScaleAsk} in order: a growth or churn
 *   version applied and committed (the set/remove + commit time in ns; RSS sampled after the set/remove and after
 *   the commit), a batch of gets (ns per get; every value checked afterwards), a reopen (ms from `Tree.open` to the
 *   first answered get, after a collection of the closed tree's garbage), the latest version exported to a file, its
 *   {@link ScaleStats} (after a flush), the versions kept now (no flush), a timed flush, or null to close.
 * - `scale-export <dir> <version>`: exports `version` through `Tree.openReadOnly`, as a second process beside the
 *   writer, until the export ends or "stop" comes; answers "started" after its first 10,000 nodes, then an
 *   {@link ExportRun}, and exits at "stop".
 * @module
 */
import { closeSync, openSync, writeSync } from "node:fs";
import { setImmediate as tick } from "node:timers/promises";
import { encodeItems, Tree, type ExportNode, type OpenOptions } from "../src/index.js";
import { Churn, grown, keyOf, setIn, valueOf } from "./scale-data.js";
import { peakRssNow, timedCommit, type PeakRss } from "./subjects.js";
import { consume, gc, nsPerGet } from "./timing.js";

/** What the bench asks the store's process; see the module comment. */
export type ScaleAsk =
  | { grow: number }
  | { churn: number }
  | { gets: Int32Array; at?: number }
  | { reopen: OpenOptions; first?: number }
  | { export: string }
  | "stats"
  | "kept"
  | "flush"
  | null;

export interface ScaleStats extends PeakRss {
  version: number;
  size: number;
  /** The versions kept, oldest first, after a flush. */
  oldest: number;
  kept: number;
}

/** The latest version exported to a file: its nodes, the time spent in the export's iterator alone, its root. */
export interface Exported {
  nodes: number;
  ns: number;
  version: number;
  hash: Uint8Array;
}

/** How far an export beside the writer got: nodes and ms, and whether it reached the end. */
export interface ExportRun {
  nodes: number;
  ms: number;
  done: boolean;
}

const send = (m: unknown): void => void process.send!(m as object);

async function writer(dir: string, perVersion: number): Promise<void> {
  let tree = Tree.open(dir);
  let churn: Churn | undefined;
  const s = peakRssNow();
  const commit = (changes: Parameters<typeof timedCommit>[1]): number => timedCommit(tree, changes, s);
  const answer = async (m: ScaleAsk): Promise<unknown> => {
    if (m === null) return (tree.close(), "closed");
    // Versions kept now, those still landing included: no flush, which would land them outside any timing.
    if (m === "kept") return tree.versions().length;
    // The versions still landing, timed: the end of a run of versions.
    if (m === "flush") {
      const t0 = process.hrtime.bigint();
      await tree.flush();
      return Number(process.hrtime.bigint() - t0);
    }
    if (m === "stats") {
      await tree.flush();
      const kept = tree.versions();
      return { ...s, version: tree.version, size: tree.size, oldest: kept[0], kept: kept.length } satisfies ScaleStats;
    }
    if ("grow" in m) return commit(grown(m.grow, perVersion));
    if ("churn" in m) return commit((churn ??= new Churn(tree.size)).version(m.churn));
    if ("gets" in m) {
      const idx = [...m.gets];
      const [keys, got, view] = [idx.map(keyOf), [] as Array<Uint8Array | undefined>, m.at === undefined ? tree : tree.at(m.at)];
      const ns = nsPerGet(keys, (k) => (got[got.length] = view.get(k)));
      idx.forEach((i, j) => {
        if (Buffer.compare(got[j]!, valueOf(i, setIn(i, perVersion))) !== 0) throw new Error(`bench: key ${i} has another value`);
      });
      return ns;
    }
    if ("reopen" in m) {
      tree.close();
      gc(); // the closed tree's garbage, not collected inside the timed gets that follow
      const key = m.first === undefined ? undefined : keyOf(m.first);
      const t0 = performance.now();
      tree = Tree.open(dir, m.reopen);
      if (key !== undefined && tree.get(key) === undefined) throw new Error("bench: the first get after reopening found nothing");
      return performance.now() - t0;
    }
    return exportTo(tree, m.export);
  };
  let busy = Promise.resolve();
  process.on("message", (m: ScaleAsk) => {
    busy = busy.then(async () => {
      send(await answer(m));
      if (m === null) process.disconnect();
    });
  });
}

/** Exports the latest version to `file` (the SnapshotIAVLItem stream), timing only the export's iterator. */
function exportTo(tree: Tree, file: string): Exported {
  const it = tree.at(tree.version).export()[Symbol.iterator]();
  const r: Exported = { nodes: 0, ns: 0, version: tree.version, hash: tree.hash };
  function* timed(): Generator<ExportNode> {
    for (;;) {
      const t0 = process.hrtime.bigint();
      const n = it.next();
      r.ns += Number(process.hrtime.bigint() - t0);
      if (n.done === true) return;
      r.nodes++;
      yield n.value;
    }
  }
  const fd = openSync(file, "w");
  const buf = Buffer.alloc(1 << 22);
  let at = 0;
  const flush = (): void => void (writeSync(fd, buf, 0, at), (at = 0));
  for (const item of encodeItems(timed())) {
    if (at + item.length > buf.length) flush();
    if (item.length > buf.length) writeSync(fd, item);
    else buf.set(item, at), (at += item.length);
  }
  flush();
  closeSync(fd);
  return r;
}

async function exporter(dir: string, version: number): Promise<void> {
  let stop = false;
  const stopped = new Promise<void>((resolve) => {
    const end = (): void => void ((stop = true), resolve());
    process.on("message", (m) => m === "stop" && end());
    process.on("disconnect", end);
  });
  const store = Tree.openReadOnly(dir);
  const t0 = performance.now();
  const r: ExportRun = { nodes: 0, ms: 0, done: true };
  for (const n of store.at(version).export()) {
    consume(n);
    if (++r.nodes % 10_000 !== 0) continue;
    if (r.nodes === 10_000) send("started");
    await tick(); // lets "stop" in
    if (stop) {
      r.done = false;
      break;
    }
  }
  r.ms = performance.now() - t0;
  store.close();
  if (r.nodes < 10_000) send("started");
  send(r);
  await stopped; // so that the bench's "stop" always finds the channel open
  if (process.connected) process.disconnect();
}

/** Runs scale role `role` (see the module comment) with the child's arguments. */
export async function scaleRole(role: string, dir: string, arg: string): Promise<void> {
  if (role === "scale") await writer(dir, Number(arg));
  else await exporter(dir, Number(arg));
}
