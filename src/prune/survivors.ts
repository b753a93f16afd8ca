/**
 * The survivors of a prune: the branches of the trees kept versions still read (the replay base's and every kept
 * snapshot's) that live in shards about to be dropped, copied into a new compacted generation. Leaves live in the
 * leaves table, which no prune drops whole.
 * @module
 */
import { IavlError } from "../base/errors.js";
import type { Connection } from "../sqlite/connection.js";
import { startCompaction, writeCompacted, type PrunePlan } from "../sqlite/prune-rows.js";
import type { BranchRow } from "../sqlite/rows.js";
import { LEAF_BASE } from "../sqlite/shards.js";
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
  const load = (version: number, seq: number): BranchRow => {
    const b = store.branches.one(version, seq);
    if (b === undefined) throw new IavlError("CORRUPT", `branch ${version}/${seq}, which a kept tree holds, is missing from the store`);
    return b;
  };
  // Roots as stored sequences: a leaf root (one-key tree) has no branch to copy.
  const stack: BranchRow[] = [];
  const base = plan.base;
  const rootOf = (version: number | null, seq: number | null): void => {
    if (version !== null && seq !== null && seq < LEAF_BASE) stack.push(load(version, seq));
  };
  if (base !== undefined) rootOf(base.rootVersion, base.rootSeq);
  for (const v of plan.snapshots) {
    const row = store.versions.row(v);
    if (row !== undefined) rootOf(row.rootVersion, row.rootSeq);
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
  while (stack.length > 0) {
    const b = stack.pop()!;
    const id = `${b.version}/${b.seq}`;
    if (seen.has(id)) continue;
    seen.add(id);
    if (b.version <= plan.compactThrough) batch.push(b);
    if (batch.length >= BATCH) {
      flush();
      checkStop();
    }
    if (b.rightSeq < LEAF_BASE) stack.push(load(b.rightVersion, b.rightSeq));
    if (b.leftSeq < LEAF_BASE) stack.push(load(b.leftVersion, b.leftSeq));
  }
  flush();
}
