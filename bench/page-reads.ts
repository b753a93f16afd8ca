/**
 * SQLite rows read by the writer's loads per change past the memory budget (issue 38's first target), for whichever
 * source tree `IAVLITE_SRC` names (default: this checkout's src; point it at another checkout's src to compare):
 * grows a store to `--keys` bank-shaped keys (bench/scale-data.ts) with a large budget, closes it (a checkpoint),
 * or with `--import` imports the same tree (bench/scale-stream.ts: minutes at 10M keys, where growing takes over an
 * hour), reopens it with `--budget` MiB, runs `--warm` churn versions (they load the spine, which stays), then `--versions`
 * measured ones, counting every branch, leaves and page row the loads read (the readers' lookups, wrapped: the same
 * count on any layout) and the commit rate.
 *
 *   npx tsx bench/page-reads.ts --keys 1000000 --budget 64 --warm 40 --versions 50
 *   npx tsx bench/page-reads.ts --keys 10000000 --budget 512 --import
 * @module
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { ExportNode } from "../src/index.js";
import { Churn, grown } from "./scale-data.js";
import { scaleStream } from "./scale-stream.js";
import type { Change } from "./workload.js";

const { values: a } = parseArgs({
  options: { import: { type: "boolean", default: false }, keys: { type: "string", default: "1000000" }, budget: { type: "string", default: "64" }, warm: { type: "string", default: "40" }, versions: { type: "string", default: "50" } },
});
const KEYS = Number(a.keys);
const PER = 10_000;
const src = resolve(process.env["IAVLITE_SRC"] ?? join(import.meta.dirname, "../src"));

interface Opened {
  set(k: Uint8Array, v: Uint8Array): void;
  remove(k: Uint8Array): boolean;
  commit(): unknown;
  close(): void;
}
const { Tree } = (await import(join(src, "index.js"))) as {
  Tree: { open(dir: string, o: object): Opened; import(dir: string, nodes: Iterable<ExportNode>, o: object): Promise<Opened> };
};
const rows: Record<string, number> = { branch: 0, leaf: 0, page: 0, checkpoint: 0, batched: 0 };
/** True while a version's rows are made and written: a load then is a checkpoint's (a page boundary that moved). */
let writing = false;
/** Counts the calls of a reader's lookup. */
function count(proto: Record<string, unknown>, method: string, kind: string): void {
  const f = proto[method] as (...args: unknown[]) => unknown;
  proto[method] = function (this: unknown, ...args: unknown[]): unknown {
    rows[kind]!++;
    if (writing) rows["checkpoint"]!++;
    return f.apply(this, args);
  };
}
{
  const proto = (await import(join(src, "store/write/version-writer.js"))).VersionWriter.prototype as Record<string, unknown>;
  const f = proto["write"] as (...args: unknown[]) => unknown;
  proto["write"] = function (this: unknown, ...args: unknown[]): unknown {
    writing = true;
    try {
      return f.apply(this, args);
    } finally {
      writing = false;
    }
  };
}
count((await import(join(src, "sqlite/branch-reader.js"))).BranchReader.prototype, "one", "branch");
{
  // Branch rows read many to a query (the spine brought back after a reopen; an export's walk): counted by the row.
  const proto = (await import(join(src, "sqlite/branch-reader.js"))).BranchReader.prototype as Record<string, unknown>;
  const f = proto["many"] as (...args: unknown[]) => unknown[];
  proto["many"] = function (this: unknown, ...args: unknown[]): unknown[] {
    const found = f.apply(this, args);
    rows["batched"]! += found.length;
    return found;
  };
}
count((await import(join(src, "sqlite/leaf-reader.js"))).LeafReader.prototype, "leaf", "leaf");
try {
  count((await import(join(src, "sqlite/page-rows.js"))).PageReader.prototype, "one", "page");
} catch {
  // A layout without pages.
}

// What checkpoints write (inline writes carry counts): checkpoints, branch rows, page rows and their bytes.
const written = { checkpoints: 0, branches: 0, pages: 0, pageBytes: 0 };
{
  const proto = (await import(join(src, "sqlite/store-writer.js"))).StoreWriter.prototype as Record<string, unknown>;
  const f = proto["writeVersion"] as (w: { version: { checkpoint: boolean }; completes?: object; branches: { count: number }; pages?: { count: number; bytes: number } }) => void;
  proto["writeVersion"] = function (this: unknown, w: Parameters<typeof f>[0]): void {
    // A checkpoint spread over commits is flagged by the write of its last step (`completes`), not by its version's.
    if (w.version.checkpoint || w.completes !== undefined) written.checkpoints++;
    written.branches += w.branches.count;
    written.pages += w.pages?.count ?? 0;
    written.pageBytes += w.pages?.bytes ?? 0;
    f.call(this, w);
  };
}

const apply = (t: Opened, changes: Change[]): void => {
  for (const c of changes) {
    if (c.delete) t.remove(c.key);
    else t.set(c.key, c.value!);
  }
};
const dir = mkdtempSync(join(tmpdir(), "page-reads-"));
try {
  let v = 0;
  const t0 = performance.now();
  if (a.import) {
    v = Math.ceil(KEYS / PER);
    (await Tree.import(dir, scaleStream(KEYS, PER), { version: v })).close();
  } else {
    const grow = Tree.open(dir, { memoryBudgetMiB: 2048 });
    while (v * PER < KEYS) {
      apply(grow, grown(++v, PER));
      grow.commit();
    }
    grow.close();
  }
  console.log(`${a.import ? "imported" : "grew"} ${KEYS} keys in ${((performance.now() - t0) / 1000).toFixed(1)} s (${src})`);
  const t = Tree.open(dir, { memoryBudgetMiB: Number(a.budget) });
  const churn = new Churn(KEYS);
  const run = (n: number, label: string): void => {
    for (const k of Object.keys(rows)) rows[k] = 0;
    Object.assign(written, { checkpoints: 0, branches: 0, pages: 0, pageBytes: 0 });
    let changes = 0;
    const s = performance.now();
    for (let j = 0; j < n; j++) {
      const c = churn.version(++v);
      changes += c.length;
      apply(t, c);
      t.commit();
    }
    const secs = (performance.now() - s) / 1000;
    const all = rows["branch"]! + rows["leaf"]! + rows["page"]! + rows["batched"]!;
    const per = (x: number): string => (x / changes).toFixed(3);
    console.log(
      `${label}: ${n} versions, ${changes} changes, ${(changes / secs).toFixed(0)} changes/s; rows read per change ${per(all)} (branch ${per(rows["branch"]!)}, leaf ${per(rows["leaf"]!)}, page ${per(rows["page"]!)}, spine rows read in batches ${per(rows["batched"]!)}; of them by checkpoints ${per(rows["checkpoint"]!)}); ` +
        `${written.checkpoints} checkpoints wrote per change ${per(written.branches)} branch rows, ${per(written.pages)} pages (${(written.pageBytes / Math.max(1, written.pages)).toFixed(0)} bytes each)`,
    );
    // What memory holds at the end: the writer's node records against its budget (200 bytes a record), and the process
    // (whose RSS includes what a build or an import in this process left).
    const live = (t as unknown as { backend: { set: { src: { t: { live: number } } } } }).backend.set.src.t.live;
    const mem = process.memoryUsage();
    console.log(
      `  at its end: ${live} node records (the budget counts ${Math.floor((Number(a.budget) * 2 ** 20) / 200)}); RSS ${(mem.rss / 2 ** 20).toFixed(0)} MiB, ` +
        `JS heap ${(mem.heapUsed / 2 ** 20).toFixed(0)} MiB, array buffers ${(mem.arrayBuffers / 2 ** 20).toFixed(0)} MiB`,
    );
  };
  run(Number(a.warm), `warm-up, budget ${a.budget} MiB`);
  // PROFILE=file: a CPU profile of the measured versions alone.
  const out = process.env["PROFILE"];
  const session = out === undefined ? undefined : new Session();
  const post = (m: string, p?: object): Promise<unknown> => new Promise((res, rej) => session!.post(m, p ?? {}, (e, r) => (e ? rej(e) : res(r))));
  if (session !== undefined) {
    session.connect();
    await post("Profiler.enable");
    await post("Profiler.start");
  }
  run(Number(a.versions), `measured, budget ${a.budget} MiB`);
  if (session !== undefined) writeFileSync(out!, JSON.stringify(((await post("Profiler.stop")) as { profile: object }).profile));
  t.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
