/**
 * Rollback: deletes every version after a given one, in one transaction, so that the store reopens there.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { sql, type Connection } from "./connection.js";
import { metaNumber, recordRollback } from "./meta.js";
import { compactedTable, dropBranchTable, shardTable } from "./shards.js";
import { StoreReader } from "./store-reader.js";
import { writeTransaction } from "./write-errors.js";

/**
 * Deletes versions > `version`; returns how many were removed. Throws `VERSION_PRUNED`/`VERSION_NOT_FOUND` for a
 * version the store does not hold. `version` 0 empties the store (a multi-store's first version that never became
 * whole). The rollback is recorded, so that readers of a replaced version find out.
 */
export function rollbackStore(db: Connection, version: number): number {
  const store = new StoreReader(db);
  return writeTransaction(db, `rolling back to version ${version}`, () => {
    const latest = store.latest()?.version ?? 0;
    if (version >= latest) return 0;
    if (version > 0 && store.version(version) === undefined) {
      const e = store.missing(version, latest);
      throw new IavlError(e.code, `cannot roll back to version ${version}: ${e.message}`);
    }
    recordRollback(db, version);
    const removed = sql(db, "DELETE FROM versions WHERE version > ?").run(version).changes;
    sql(db, "DELETE FROM leaves WHERE version > ?").run(version);
    sql(db, "DELETE FROM version_ops WHERE version > ?").run(version);
    if (version === 0) {
      for (const id of sql(db, "SELECT id FROM shards").pluck().all() as number[]) dropBranchTable(db, shardTable(id));
      const gen = metaNumber(db, "compact_gen");
      if (gen !== undefined) dropBranchTable(db, compactedTable(gen));
      sql(db, "DELETE FROM shards").run();
      sql(db, "DELETE FROM meta WHERE name NOT IN ('shard_size', 'rollbacks') AND name NOT LIKE 'rollback\\_%' ESCAPE '\\'").run();
      return removed;
    }
    // Branches newer than the replay base were all written by checkpoints after `version`: a replay of the
    // kept versions recreates them, and the next checkpoint writes them again under the same keys.
    const base = store.replayBase(version)?.version ?? 0;
    for (const id of sql(db, "SELECT id FROM shards WHERE last > ?").pluck().all(base) as number[]) {
      sql(db, `DELETE FROM ${shardTable(id)} WHERE version > ?`).run(base);
    }
    return removed;
  });
}
