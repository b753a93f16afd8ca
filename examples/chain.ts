/**
 * The main job (`npm start`): simulates a chain on a default embedded store in ./data, with the iavl-bench "mixed"
 * profile scaled to run in about a minute: three stores committed together for a few hundred versions, a separate
 * read-only process serving historic queries and checking them, and pruning in the background. A second run
 * continues the same chain.
 *
 * Environment: IAVLITE_DATA (default ./data), IAVLITE_VERSIONS (default 300), IAVLITE_KEEP (versions kept, 100),
 * IAVLITE_WAL_CHECKPOINTS ("own", the default, or "external" while `iavlite replicate` runs Litestream beside it).
 */
import { spawn } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { iavlSpec, verifyMembership } from "@confio/ics23";
import cliProgress from "cli-progress";
import { MultiTree, toHex } from "../src/index.js";
import { mixedProfiles, Workload } from "../bench/workload.js";

const dir = process.env["IAVLITE_DATA"] ?? "data";
const versions = Number(process.env["IAVLITE_VERSIONS"] ?? 300);
const keep = Number(process.env["IAVLITE_KEEP"] ?? 100);
const walCheckpoints = process.env["IAVLITE_WAL_CHECKPOINTS"] ?? "own";
if (walCheckpoints !== "own" && walCheckpoints !== "external") throw new Error(`IAVLITE_WAL_CHECKPOINTS must be "own" or "external", got "${walCheckpoints}"`);

// The mixed profile's shape (three stores, their key and value sizes, delete ratios), scaled to a demo: a tenth of
// the initial keys and of the changes per version.
const profiles = mixedProfiles(10_000).map((p) => ({
  ...p,
  initialSize: Math.round(p.initialSize / 10),
  changesPerVersion: Math.round(p.changesPerVersion / 10),
  growthPerVersion: (p.growthPerVersion ?? 0) / 10,
}));
const stores = profiles.map((p) => p.name).sort();

function diskUse(path: string): number {
  let n = 0;
  for (const e of readdirSync(path, { withFileTypes: true })) {
    const p = join(path, e.name);
    n += e.isDirectory() ? diskUse(p) : statSync(p).size;
  }
  return n;
}

const multi = MultiTree.open(dir, { stores, checkpointInterval: 50, walCheckpoints });
const startVersion = multi.version;
const work = new Workload(profiles, 7 + startVersion);
let ops = 0;
const t0 = performance.now();
const apply = (changes: Iterable<{ store: string; key: Uint8Array; value?: Uint8Array; delete: boolean }>): void => {
  for (const c of changes) {
    const t = multi.tree(c.store);
    if (c.delete) t.remove(c.key);
    else t.set(c.key, c.value!);
    ops++;
  }
};
if (startVersion === 0) {
  apply(work.initial());
  multi.commit();
} else {
  // Continue the stored chain: the workload adopts the keys the stores hold now.
  work.resume(startVersion, new Map(stores.map((s) => [s, [...multi.tree(s).iterate()].map(([k]) => k)])));
  console.log(`continuing the chain in ${dir} from version ${startVersion}`);
}

const here = fileURLToPath(new URL(".", import.meta.url));
const query = spawn(process.execPath, ["--import", "tsx", join(here, "query-process.ts"), dir, ...stores], { stdio: ["ignore", "pipe", "inherit"] });
let queryOut = "";
query.stdout.on("data", (d: Buffer) => (queryOut += d.toString()));
// It reads while the chain commits: wait until it is reading, so that it is there to stop at the end.
await new Promise<void>((resolve, reject) => {
  const seen = (): void => {
    if (!queryOut.startsWith("ready\n")) return;
    query.stdout.off("data", seen);
    query.off("exit", gone);
    resolve();
  };
  const gone = (code: number | null): void => reject(new Error(`the query process exited (${code}) before it was ready`));
  query.stdout.on("data", seen);
  query.once("exit", gone);
});

const bar = new cliProgress.SingleBar(
  { format: "chain |{bar}| {value}/{total} versions | {ops} ops/s | kept {kept}", hideCursor: true, stream: process.stderr },
  cliProgress.Presets.shades_classic,
);
const target = multi.version + versions - (startVersion === 0 ? 1 : 0);
bar.start(target - startVersion, 0, { ops: 0, kept: 0 });
let pruning: Promise<unknown> | undefined;
let prunedRuns = 0;
while (multi.version < target) {
  apply(work.nextVersion());
  const { version } = multi.commit();
  // Pruning runs in worker threads; one prune at a time, started every few versions.
  if (pruning === undefined && version > keep && version % 10 === 0) {
    pruning = multi.prune(version - keep).then(() => {
      pruning = undefined;
      prunedRuns++;
    });
  }
  await new Promise((r) => setImmediate(r)); // let prune promises and the progress bar move
  const secs = (performance.now() - t0) / 1000;
  bar.update(version - startVersion, { ops: Math.round(ops / secs), kept: multi.tree(stores[0]!).versions().length });
}
bar.stop();
await pruning;
// A last prune, so that what is kept is exactly the retention asked for.
if (multi.version > keep) {
  await multi.prune(multi.version - keep);
  prunedRuns++;
}
const seconds = (performance.now() - t0) / 1000;

query.kill("SIGTERM");
await new Promise((r) => query.once("exit", r));
const q = JSON.parse(queryOut.trim().split("\n").pop() ?? "{}") as { reads?: number; proofs?: number; appHashes?: number; mismatches?: number; pruned?: number };

// One proof, verified the way a light client would.
const bank = multi.tree("bank");
const [key, value] = bank.iterate().next().value as [Uint8Array, Uint8Array];
const proofOk = verifyMembership(bank.proof(key), iavlSpec, bank.hash, key, value);
const kept = bank.versions();
const [last, appHash] = [multi.version, toHex(multi.appHash)];
multi.close();
// Measured after the close, which checkpoints each store's WAL into its file and removes it: what du shows once the
// job has ended (while it ran, each WAL held up to 64 MiB more).
const disk = diskUse(dir);

console.log(`\nchain in ${dir}: versions ${startVersion + 1}..${last} in ${seconds.toFixed(1)} s`);
console.log(`  throughput      ${Math.round(ops / seconds)} ops/s (${ops} sets and removes over ${stores.length} stores)`);
console.log(`  versions kept   ${kept[0]}..${kept[kept.length - 1]} (${kept.length}); ${prunedRuns} background prunes`);
console.log(`  disk use        ${(disk / 2 ** 20).toFixed(1)} MiB (${disk} bytes, after the close)`);
console.log(`  app hash        ${appHash}`);
console.log(`  query process   ${q.reads ?? 0} reads, ${q.proofs ?? 0} proofs, ${q.appHashes ?? 0} app hashes checked, ${q.mismatches ?? "?"} mismatches, ${q.pruned ?? 0} pruned under it`);
console.log(`  proof           bank key ${toHex(key).slice(0, 16)}… verified by @confio/ics23: ${proofOk}`);
if (!proofOk || q.mismatches !== 0) process.exit(1);
