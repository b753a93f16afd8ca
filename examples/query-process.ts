/**
 * The main job's query process: opens every store of the chain read-only, in its own process, and until told to
 * stop serves historic queries of kept versions, checking each answer: a proof of the value against the version's
 * root hash, and the stores' hashes against the app hash the chain recorded. Prints one JSON line of totals.
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import { iavlSpec, verifyMembership, verifyNonMembership } from "@confio/ics23";
import { commitInfoHash, IavlError, Tree } from "../src/index.js";

const [dir, ...stores] = process.argv.slice(2);
const readers = new Map(stores.map((s) => [s, Tree.openReadOnly(join(dir!, "stores", s))]));
const commits = new Database(join(dir!, "commits.sqlite"), { readonly: true });
const appHashAt = commits.prepare("SELECT app_hash FROM commits WHERE version = ?").pluck();
const stats = { reads: 0, proofs: 0, appHashes: 0, mismatches: 0, pruned: 0 };
let stop = false;
process.on("SIGTERM", () => (stop = true));
let seed = 42;
const rand = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);

while (!stop) {
  const latest = Math.min(...[...readers.values()].map((r) => r.refresh()));
  if (latest > 0) {
    const first = Math.max(...[...readers.values()].map((r) => r.versions()[0] ?? latest));
    const v = first + Math.floor(rand() * (latest - first + 1));
    try {
      const hashes = new Map<string, Uint8Array>();
      for (const [name, r] of readers) {
        const view = r.at(v);
        hashes.set(name, view.hash);
        // A random existing key (from a random start), proven against this version's root.
        const start = new Uint8Array([Math.floor(rand() * 256)]);
        const entry = view.iterate({ start }).next();
        stats.reads++;
        if (entry.done !== true && entry.value[1].length > 0) {
          const [k, val] = entry.value;
          if (!verifyMembership(view.proof(k), iavlSpec, view.hash, k, val)) stats.mismatches++;
          stats.proofs++;
        } else if (entry.done === true && view.size > 0) {
          if (!verifyNonMembership(view.proof(start), iavlSpec, view.hash, start)) stats.mismatches++;
          stats.proofs++;
        }
      }
      const recorded = appHashAt.get(v) as Uint8Array | undefined;
      if (recorded !== undefined) {
        if (Buffer.compare(Buffer.from(commitInfoHash(hashes)), recorded) !== 0) stats.mismatches++;
        stats.appHashes++;
      }
    } catch (e) {
      if (e instanceof IavlError && e.code === "VERSION_PRUNED") stats.pruned++;
      else throw e;
    }
  }
  await new Promise((r) => setTimeout(r, 2));
}
for (const r of readers.values()) r.close();
commits.close();
process.stdout.write(JSON.stringify(stats) + "\n");
