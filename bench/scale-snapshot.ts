/**
 * The scale section's grown store at 10M keys (quick: 200k), before the churn changes it (bench/scale.ts): what an
 * operator and a syncing node meet there. (Its reopen time is measured with the gets at each size.)
 *
 * - Export of the latest version in the store's process: the time inside the export's iterator (the stream goes to
 *   a file between nodes) against a plain scan of as many rows.
 * - `iavlite verify` (the latest version) and `iavlite info`, the built-in program run as an operator runs it (node +
 *   tsx on src/cli/main.ts, as test/cli.test.ts) beside the idle writer: context, against the export and the CLI's
 *   own start-up (`iavlite --version`).
 * - `Tree.import` of that file into a fresh folder (decoded as it is read) against the state-sync section's floor
 *   (every node hashed and its rows inserted in one pass) fed the same file; at full size on its first 4M nodes only,
 *   to bound the floor's time and disk.
 * - The writer's churn rate (bench/scale-churn.ts) while a second process exports the grown version through
 *   `Tree.openReadOnly`, against the writer alone over as many churn versions just before.
 * @module
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createReadStream, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { decodeItems, Tree } from "../src/index.js";
import { Child } from "./child-process.js";
import { fasterPlain, layoutFile, LAYOUTS, perLayout } from "./floors.js";
import { floorOf } from "./report.js";
import type { Exported, ExportRun } from "./scale-child.js";
import { churnVersion } from "./scale-churn.js";
import type { Scale } from "./scale.js";
import { ImportFloor } from "./state-sync.js";
import { bytesOf, checkFree, int, median, mib, sum, timeNsAsync } from "./timing.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** Milliseconds `iavlite args…` takes, from spawning it to its exit (which must be 0). */
async function cliMs(...args: string[]): Promise<number> {
  const t0 = performance.now();
  const p = spawn(process.execPath, ["--import", "tsx", join(ROOT, "src/cli/main.ts"), ...args], { cwd: ROOT, stdio: "ignore" });
  const [code] = (await once(p, "exit")) as [number | null];
  if (code !== 0) throw new Error(`bench: iavlite ${args.join(" ")} exited with ${code}`);
  return performance.now() - t0;
}

export async function snapshot(s: Scale): Promise<void> {
  const { b } = s;
  const keys = `${int(s.size)} keys`;
  const file = join(s.dir, "export.bin");
  checkFree(s.dir);
  b.log(`export of v${s.version} to a file`);
  const ex = await s.ask<Exported>({ export: file });
  if (ex.nodes !== 2 * s.size - 1) throw new Error(`bench: the export gave ${ex.nodes} nodes`);
  const scans = fasterPlain(perLayout((_, i) => s.plains[i]!.scan(ex.nodes)), "nodes/s", "SELECT key, value of as many rows");
  b.row(`export at ${keys} (${int(ex.nodes)} nodes)`, ex.nodes / (ex.ns / 1e9), "nodes/s", scans,
    { target: 1, note: `the time inside the export's iterator; the stream (${int(mib(bytesOf(file)))} MiB) went to a file between nodes` });

  b.log("iavlite verify and info");
  const start = median([await cliMs("--version"), await cliMs("--version"), await cliMs("--version")]);
  b.row(`iavlite verify of the latest version at ${keys}`, await cliMs("verify", s.store), "ms",
    floorOf("the export above (every node read, none hashed)", ex.ns / 1e6), { note: `context; the CLI's start-up ${int(start)} ms` });
  b.row(`iavlite info at ${keys}`, await cliMs("info", s.store), "ms", floorOf("iavlite --version (node + tsx + the CLI's start-up)", start),
    { note: "context" });

  await importOf(s, file, ex);
  rmSync(file);
  await beside(s);
}

/** Tree.import of the export file into a fresh folder, against the state-sync floor fed the same file. */
async function importOf(s: Scale, file: string, ex: Exported): Promise<void> {
  const { b } = s;
  const dir = join(s.dir, "imported");
  const read = (): ReturnType<typeof decodeItems> => decodeItems(createReadStream(file, { highWaterMark: 1 << 20 }));
  b.log(`import of ${int(ex.nodes)} nodes from the file`);
  checkFree(s.dir);
  let t: Tree | undefined;
  const ns = await timeNsAsync(async () => (t = await Tree.import(dir, read(), { version: ex.version, expectedHash: ex.hash })));
  if (t!.size !== s.size) throw new Error("bench: the import does not match");
  t!.close();
  const imported = mib(bytesOf(dir));
  rmSync(dir, { recursive: true });

  const limit = Math.min(ex.nodes, b.q(Infinity, 4_000_000));
  b.log(`floor: hashing and inserting ${int(limit)} nodes from the file, both layouts`);
  const floorNs = perLayout(() => 0);
  for (const l of LAYOUTS) {
    const into = layoutFile(s.dir, "import-floor", l);
    floorNs[l] = await timeNsAsync(async () => {
      const f = new ImportFloor(into, l);
      for await (const n of read()) if ((f.add(n), f.nodes === limit)) break;
      const root = f.end();
      if (limit === ex.nodes && Buffer.compare(root, ex.hash) !== 0) throw new Error("bench: the floor's hashes miss the root hash");
    });
    rmSync(into);
  }
  const floor = fasterPlain(perLayout((l) => limit / (floorNs[l] / 1e9)), "nodes/s", "hash every node + insert the same rows in 1 tx");
  const part = limit === ex.nodes ? "the whole file" : `the file's first ${int(limit)} nodes`;
  const note = `import ${(ns / 1e9).toFixed(1)} s in all, imported store ${int(imported)} MiB; the floor fed ${part}, decoded as the import's`;
  b.row(`import of that export into a fresh folder (${int(ex.nodes)} nodes, from a file)`, ex.nodes / (ns / 1e9), "nodes/s", floor,
    { target: 1 / 0.8, note });
}

/** The writer's churn rate while a second process exports the grown version, against the writer alone just before. */
async function beside(s: Scale): Promise<void> {
  const { b } = s;
  const [n, grown] = [b.q(10, 100), s.version];
  b.log(`${n} churn versions alone, then up to ${n} while a second process exports v${grown}`);
  const rate = (rs: Array<Awaited<ReturnType<typeof churnVersion>>>): number =>
    sum(rs.map((r) => r.changes.length)) / (sum(rs.map((r) => r.store)) / 1e9);
  const alone = [];
  for (let j = 0; j < n; j++) alone.push(await churnVersion(s));
  const exporter = new Child("scale-export", [s.store, String(grown)]);
  const during = [];
  let run: ExportRun | undefined;
  try {
    await exporter.ask<string>(); // "started"
    while (during.length < n && (run = exporter.poll<ExportRun>()) === undefined) during.push(await churnVersion(s));
    exporter.send("stop");
    run ??= await exporter.ask<ExportRun>();
  } finally {
    exporter.kill();
  }
  const note = `${during.length} versions committed while the export ran (${int(run.nodes)} nodes in ${(run.ms / 1e3).toFixed(1)} s, ` +
    `${int(run.nodes / (run.ms / 1e3))} nodes/s${run.done ? ", to its end" : ", then stopped"}); timed in the writer's process`;
  b.row(`writer at ${int(s.size)} keys while a second process exports v${grown}`, rate(during), "ops/s",
    floorOf(`the writer alone, the ${n} churn versions before`, rate(alone)), { target: 1 / 0.7, note });
}
