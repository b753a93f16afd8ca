/**
 * The replicas section's writer, in a process of its own (bench/child.ts role `replica-writer`): it reopens the
 * multi-store the bench loaded, skips the versions already committed, and commits `versions` more of the mixed
 * stream, at full speed or one every `paceMs` (a chain's pace: each begins `paceMs` after the one before began),
 * telling the bench each version and when it was committed (Date.now(), comparable across processes), then `null`.
 * @module
 */
import { MultiTree } from "../src/index.js";
import { applyToTree, skip } from "./subjects.js";
import { Workload, type StoreProfile } from "./workload.js";

/** What the bench sends the writer to start. */
export interface ReplicaWriterJob {
  profiles: StoreProfile[];
  seed: number;
  versions: number;
  /** Ms from one version's start to the next's; none: back to back. */
  paceMs?: number;
}

/** One commit: its version and wall-clock time, ms. */
export interface Committed {
  v: number;
  t: number;
}

export async function replicaWriter(dir: string): Promise<void> {
  const job = await new Promise<ReplicaWriterJob>((r) => process.once("message", (m) => r(m as ReplicaWriterJob)));
  const w = new Workload(job.profiles, job.seed);
  const m = MultiTree.open(dir, { stores: w.storeNames });
  // Version 1 is the initial load.
  skip(w, m.version - 1);
  const send = (x: Committed | null): void => void process.send!(x);
  const t0 = Date.now();
  for (let i = 0; i < job.versions; i++) {
    if (job.paceMs !== undefined) await new Promise((r) => setTimeout(r, t0 + i * job.paceMs! - Date.now()));
    const groups = w.storeNames.map(() => [] as Parameters<typeof applyToTree>[1][number][]);
    for (const c of w.nextVersion()) groups[w.storeNames.indexOf(c.store)]!.push(c);
    groups.forEach((g, s) => applyToTree(m.tree(w.storeNames[s]!), g));
    const { version } = m.commit();
    send({ v: version, t: Date.now() });
    // The event loop turns between versions, as in a node between blocks.
    await new Promise((r) => setImmediate(r));
  }
  m.close();
  send(null);
}
