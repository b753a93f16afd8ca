/**
 * Rollback: deletes every version after a given one, in one transaction, so that the store reopens there.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { sql, type Connection } from "./connection.js";
import { metaNumber, recordRollback, setMeta } from "./meta.js";
import { compactedTable, dropBranchTable, shardTable } from "./shards.js";
import { StoreReader } from "./store-reader.js";
import { dropCheckpointsAfter } from "./unfinished-checkpoints.js";
import { writeTransaction } from "./write-errors.js";

/**
 * Deletes versions > `version`; returns how many were removed. Throws `VERSION_PRUNED`/`VERSION_NOT_FOUND` for a
 * version the store does not hold. `version` 0 empties the store (a multi-store's first version that never became
 * whole). The rollback is recorded, so that readers of a replaced version find out.
 */
export function rollbackStore(db: Connection, version: number): number {
  const store = new StoreReader(db);
  return writeTransaction(db, `rolling back to version ${version}`, () => {
    const latest = store.versions.latest()?.version ?? 0;
    if (version >= latest) return 0;
    if (version > 0 && store.versions.row(version) === undefined) {
      const e = store.versions.missing(version, latest);
      throw new IavlError(e.code, `cannot roll back to version ${version}: ${e.message}`);
    }
    recordRollback(db, version);
    const removed = sql(db, "DELETE FROM versions WHERE version > ?").run(version).changes;
    sql(db, "DELETE FROM leaves WHERE version > ?").run(version);
    sql(db, "DELETE FROM version_ops WHERE version > ?").run(version);
    // The branches those versions replaced are in the tree of `version` again.
    sql(db, "DELETE FROM orphaned_branches WHERE version > ?").run(version);
    if (version === 0) {
      sql(db, "DELETE FROM pages").run();
      for (const id of sql(db, "SELECT id FROM shards").pluck().all() as number[]) dropBranchTable(db, shardTable(id));
      const gen = metaNumber(db, "compact_gen");
      if (gen !== undefined) dropBranchTable(db, compactedTable(gen));
      sql(db, "DELETE FROM shards").run();
      sql(db, "DELETE FROM meta WHERE name NOT IN ('shard_size', 'rollbacks') AND name NOT LIKE 'rollback\\_%' ESCAPE '\\'").run();
      return removed;
    }
    // Branches newer than the replay base were all written by checkpoints after `version`: a replay of the
    // kept versions recreates them, and the next checkpoint writes them again under the same keys.
    // Pages too: each was written by the checkpoint its row names. Their ids are not given again (AUTOINCREMENT).
    const base = store.versions.replayBase(version)?.version ?? 0;
    dropCheckpointsAfter(db, base);
    forgetPrunedPast(db, version, base);
    return removed;
  });
}

/**
 * What pruning recorded about versions after `version` (a keepEvery snapshot older than the last prune's base) no
 * longer holds once they are gone: the replay base, how far values and operations were pruned, and which versions'
 * branches live in the compacted table. Left as they were, replays of the versions committed next would start from
 * a deleted base, and their branches, written to shards, would be looked for in the compacted table.
 */
function forgetPrunedPast(db: Connection, version: number, base: number): void {
  const recorded = metaNumber(db, "base_version");
  if (recorded !== undefined && recorded > version) {
    setMeta(db, "base_version", null);
    setMeta(db, "base_root_version", null);
    setMeta(db, "base_root_seq", null);
  }
  const prunedTo = metaNumber(db, "pruned_to");
  if (prunedTo !== undefined && prunedTo > version) setMeta(db, "pruned_to", version);
  const leavesTo = metaNumber(db, "leaves_pruned_to");
  if (leavesTo !== undefined && leavesTo > version) setMeta(db, "leaves_pruned_to", version);
  const branchesTo = metaNumber(db, "branches_pruned_to");
  if (branchesTo !== undefined && branchesTo > version) setMeta(db, "branches_pruned_to", version);
  const through = metaNumber(db, "compact_through");
  const gen = metaNumber(db, "compact_gen");
  if (through !== undefined && gen !== undefined && through > base) {
    // Rows newer than the base were written by checkpoints after `version` (as in the shards above).
    sql(db, `DELETE FROM ${compactedTable(gen)} WHERE version > ?`).run(base);
    setMeta(db, "compact_through", base);
  }
}
