/**
 * The main job's query process: opens the chain's multi-store read-only (`MultiTree.openReadOnly`), in its own
 * process, and until told to stop serves historic queries of versions every store holds whole, checking each answer:
 * a proof of the value against the store's root hash, the stores' hashes against the app hash the chain recorded, and
 * the app-level proof of a store against that app hash. Prints one JSON line of totals.
 */
import { iavlSpec, tendermintSpec, verifyMembership, verifyNonMembership } from "@confio/ics23";
import { commitInfoHash, IavlError, MultiTree, toHex } from "../src/index.js";

const equalHashes = (a: Uint8Array, b: Uint8Array): boolean => toHex(a) === toHex(b);

const [dir, ...stores] = process.argv.slice(2);
let stop = false;
process.on("SIGTERM", () => (stop = true));
const reader = MultiTree.openReadOnly(dir!, stores.length > 0 ? { stores } : {});
const stats = { reads: 0, proofs: 0, appHashes: 0, mismatches: 0, pruned: 0 };
// The chain waits for this line before it may stop us: a SIGTERM before the handler above would end the process
// with no totals (on a busy machine, starting tsx can take longer than a short chain runs).
process.stdout.write("ready\n");
let seed = 42;
const rand = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
const enc = new TextEncoder();

while (!stop) {
  const latest = reader.refresh();
  if (latest > 0) {
    const first = reader.earliest();
    const v = first + Math.floor(rand() * (latest - first + 1));
    try {
      for (const name of reader.names) {
        const view = reader.at(name, v);
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
      // The app hash the writer recorded: the stores' hashes must give it, and each store's proof must reach it.
      const recorded = reader.appHashAt(v)!;
      const hashes = reader.storeHashes(v);
      if (!equalHashes(commitInfoHash(hashes), recorded)) stats.mismatches++;
      const name = reader.names[Math.floor(rand() * reader.names.length)]!;
      if (!verifyMembership(reader.appProof(v, name), tendermintSpec, recorded, enc.encode(name), hashes.get(name)!)) stats.mismatches++;
      stats.appHashes++;
    } catch (e) {
      if (e instanceof IavlError && e.code === "VERSION_PRUNED") stats.pruned++;
      else throw e;
    }
  }
  await new Promise((r) => setTimeout(r, 2));
}
reader.close();
process.stdout.write(JSON.stringify(stats) + "\n");
