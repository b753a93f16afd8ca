/**
 * The survivors of a prune: the nodes of the trees kept versions still read (the replay base's and every kept
 * snapshot's) that live in shards about to be dropped, copied into a new compacted generation.
 * @module
 */
import { branchRow, leafRow } from "../checkpoint/node-rows.js";
import { StoreSource } from "../checkpoint/node-source.js";
import type { Node } from "../tree/node.js";
import type { Connection } from "../sqlite/connection.js";
import { startCompaction, writeCompacted, type PrunePlan } from "../sqlite/prune-rows.js";
import type { BranchRow, LeafRow } from "../sqlite/rows.js";
import { StoreReader } from "../sqlite/store-reader.js";

/** Nodes written per transaction. */
const BATCH = 2000;

/**
 * Walks the base tree and the kept snapshots' trees and copies every node at or before `plan.compactThrough` into
 * the compacted tables of generation `plan.gen` (created empty first, so that a repeated step starts clean).
 * `onNodes` reports progress; `checkStop` runs between batches and throws to end the walk early.
 */
export function copySurvivors(db: Connection, plan: PrunePlan, onNodes: (n: number) => void, checkStop: () => void): void {
  startCompaction(db, plan.gen);
  if (plan.compactThrough < 0) return;
  const store = new StoreReader(db);
  const loader = new StoreSource(store);
  const src = loader.uncached();
  const roots: Node[] = [];
  const base = plan.base;
  if (base !== undefined && base.rootVersion !== null && base.rootSeq !== null) roots.push(loader.load({ version: base.rootVersion, seq: base.rootSeq }));
  for (const v of plan.snapshots) {
    const row = store.version(v);
    if (row?.rootVersion != null && row.rootSeq != null) roots.push(loader.load({ version: row.rootVersion, seq: row.rootSeq }));
  }
  let leaves: LeafRow[] = [];
  let branches: BranchRow[] = [];
  let copied = 0;
  const flush = (): void => {
    writeCompacted(db, plan.gen, leaves, branches);
    copied += leaves.length + branches.length;
    leaves = [];
    branches = [];
    onNodes(copied);
  };
  // Children are never newer than their parent, so a subtree whose root is past compactThrough may still hold
  // survivors; one at or before it is all survivors. A node key names one immutable subtree: trees share most of
  // theirs, and each is walked once.
  const seen = new Set<string>();
  const stack: Node[] = roots;
  while (stack.length > 0) {
    const n = stack.pop()!;
    const id = `${n.version}/${n.seq}`;
    if (seen.has(id)) continue;
    seen.add(id);
    if (n.version <= plan.compactThrough) {
      if (n.height === 0) leaves.push(leafRow(n));
      else branches.push(branchRow(n));
    }
    if (leaves.length + branches.length >= BATCH) {
      flush();
      checkStop();
    }
    if (n.height > 0) stack.push(src.right(n), src.left(n));
  }
  flush();
}
