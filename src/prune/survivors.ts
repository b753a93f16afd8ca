/**
 * The survivors of a prune: the branches of the trees kept versions still read (the replay base's and every kept
 * snapshot's) that live in shards about to be dropped, copied into a new compacted generation. Leaves live in the
 * leaves table, which no prune drops whole.
 * @module
 */
import { branchRow, memorySeq } from "../checkpoint/node-rows.js";
import { StoreSource } from "../checkpoint/node-source.js";
import type { Node } from "../tree/node.js";
import type { Connection } from "../sqlite/connection.js";
import { startCompaction, writeCompacted, type PrunePlan } from "../sqlite/prune-rows.js";
import type { BranchRow } from "../sqlite/rows.js";
import { StoreReader } from "../sqlite/store-reader.js";

/** Branches written per transaction. */
const BATCH = 2000;

/**
 * Walks the base tree and the kept snapshots' trees and copies every branch at or before `plan.compactThrough` into
 * the compacted table of generation `plan.gen` (created empty first, so that a repeated step starts clean).
 * `onNodes` reports progress; `checkStop` runs between batches and throws to end the walk early.
 */
export function copySurvivors(db: Connection, plan: PrunePlan, onNodes: (n: number) => void, checkStop: () => void): void {
  startCompaction(db, plan.gen);
  if (plan.compactThrough < 0) return;
  const store = new StoreReader(db);
  const loader = new StoreSource(store);
  const roots: Node[] = [];
  const base = plan.base;
  if (base !== undefined && base.rootVersion !== null && base.rootSeq !== null) roots.push(loader.load(base.rootVersion, memorySeq(base.rootSeq)));
  for (const v of plan.snapshots) {
    const row = store.version(v);
    if (row?.rootVersion != null && row.rootSeq != null) roots.push(loader.load(row.rootVersion, memorySeq(row.rootSeq)));
  }
  let batch: BranchRow[] = [];
  let copied = 0;
  const flush = (): void => {
    writeCompacted(db, plan.gen, batch);
    copied += batch.length;
    batch = [];
    onNodes(copied);
  };
  // Children are never newer than their parent, so a subtree whose root is past compactThrough may still hold
  // survivors; one at or before it is all survivors. A node key names one immutable subtree: trees share most of
  // theirs, and each is walked once. Leaves end the walk: they are not in the shards.
  const seen = new Set<string>();
  const stack: Node[] = roots.filter((r) => r.height > 0);
  while (stack.length > 0) {
    const n = stack.pop()!;
    const id = `${n.version}/${n.seq}`;
    if (seen.has(id)) continue;
    seen.add(id);
    if (n.version <= plan.compactThrough) batch.push(branchRow(n));
    if (batch.length >= BATCH) {
      flush();
      checkStop();
    }
    if (n.rightSeq > 0) stack.push(loader.load(n.rightVersion, n.rightSeq, n));
    if (n.leftSeq > 0) stack.push(loader.load(n.leftVersion, n.leftSeq, n));
  }
  flush();
}
