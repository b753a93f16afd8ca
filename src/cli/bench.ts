/**
 * `iavlite bench [dir]`: a quick check of this machine and disk: commits and reads on a scratch store, each figure
 * beside its floor measured in the same run (a plain SQLite key-value table doing the same writes and lookups).
 * The full benchmark suite is `npm run bench` in the repository.
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Command } from "commander";
import { Tree } from "../api/tree.js";
import { PlainKv } from "./bench-floor.js";
import { action } from "./command.js";
import { globals, intArg, out, outJson } from "./format.js";

interface BenchCliOptions {
  versions: number;
  changes: number;
}

/** Adds the `bench` command to `program`. */
export function registerBench(program: Command): void {
  program
    .command("bench")
    .description("time commits and reads on a scratch store against a plain SQLite table (floors from the same run)")
    .argument("[dir]", "where to put the scratch store (default: the OS temp folder); it is deleted after")
    .option("--versions <n>", "versions to commit", intArg(1), 200)
    .option("--changes <n>", "changes per version", intArg(1), 2000)
    .action(action({ folder: "none", takes: ["json"] }, (dir: string | undefined, opts: BenchCliOptions, cmd: Command) => bench(dir, opts, cmd)));
}

/** A deterministic 32-byte key and 100-byte value per index. */
function kv(i: number, version: number): [Uint8Array, Uint8Array] {
  const key = Buffer.alloc(32);
  key.writeUInt32BE(Math.imul(i, 2654435761) >>> 0, 0);
  key.writeUInt32BE(i, 4);
  const value = Buffer.alloc(100, version & 0xff);
  value.writeUInt32BE(i, 0);
  return [new Uint8Array(key), new Uint8Array(value)];
}

function bench(dir: string | undefined, opts: BenchCliOptions, cmd: Command): number {
  const { versions, changes } = opts;
  const root = mkdtempSync(join(dir ?? tmpdir(), "iavlite-bench-"));
  try {
    const tree = Tree.open(join(root, "tree"));
    // The floor is the faster of the two ways to build a plain table, each measured on the same stream.
    const plains = (["rowid", "without-rowid"] as const).map((layout) => ({ kv: PlainKv.open(join(root, `plain-${layout}.sqlite`), layout), writeMs: 0, getNs: 0 }));
    let treeMs = 0;
    let keys = 0;
    for (let v = 1; v <= versions; v++) {
      const batch: Array<[Uint8Array, Uint8Array]> = [];
      // Three quarters new keys, a quarter updates of earlier ones.
      for (let i = 0; i < changes; i++) batch.push(i % 4 === 3 && keys > 0 ? kv((i * 7919) % keys, v) : kv(keys++, v));
      const t = performance.now();
      for (const [k, x] of batch) tree.set(k, x);
      tree.commit();
      treeMs += performance.now() - t;
      for (const p of plains) {
        const tp = performance.now();
        p.kv.write(batch);
        p.writeMs += performance.now() - tp;
      }
    }
    const probes = Array.from({ length: 20_000 }, (_, i) => kv((i * 104729) % keys, 0)[0]);
    let t = performance.now();
    for (const k of probes) tree.get(k);
    const getNs = ((performance.now() - t) * 1e6) / probes.length;
    for (const p of plains) {
      t = performance.now();
      for (const k of probes) p.kv.get(k);
      p.getNs = ((performance.now() - t) * 1e6) / probes.length;
    }
    tree.close();
    for (const p of plains) p.kv.close();
    const ops = versions * changes;
    const plainMs = Math.min(...plains.map((p) => p.writeMs));
    const rawNs = Math.min(...plains.map((p) => p.getNs));
    const result = {
      commit: { opsPerSec: Math.round(ops / (treeMs / 1000)), floorOpsPerSec: Math.round(ops / (plainMs / 1000)), ratio: plainMs / treeMs },
      get: { ns: Math.round(getNs), floorNs: Math.round(rawNs), ratio: getNs / rawNs },
      floors: Object.fromEntries(plains.map((p) => [p.kv.layout, { opsPerSec: Math.round(ops / (p.writeMs / 1000)), getNs: Math.round(p.getNs) }])),
      keys,
    };
    if (globals(cmd).json) outJson(result);
    else {
      out(`commit  ${result.commit.opsPerSec} ops/s; plain SQLite table ${result.commit.floorOpsPerSec} ops/s: ${result.commit.ratio.toFixed(2)}× the floor`);
      out(`get     ${result.get.ns} ns; raw SQLite lookup ${result.get.floorNs} ns: ${result.get.ratio.toFixed(2)}× the floor`);
      const f = plains.map((p) => `${p.kv.layout} ${Math.round(ops / (p.writeMs / 1000))} ops/s, ${Math.round(p.getNs)} ns a get`).join("; ");
      out(`floors  the faster of: ${f}`);
      out(`(${versions} versions × ${changes} changes, ${keys} keys; npm run bench in the repository has the full suite)`);
    }
    return 0;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
