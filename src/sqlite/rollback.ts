/**
 * Rollback: deletes every version after a given one, in one transaction, so that the store reopens there.
 * @module
 */
import type Database from "better-sqlite3";
import { IavlError } from "../errors.js";
import { shardTables } from "./shards.js";
import type { StoreReader } from "./store.js";

/** Deletes versions > `version`; returns how many were removed. Throws for a version the store does not hold. */
export function rollbackStore(db: Database.Database, store: StoreReader, version: number): number {
  return db
    .transaction(() => {
      const latest = store.latest()?.version ?? 0;
      if (version >= latest) return 0;
      if (store.version(version) === undefined) {
        const earliest = store.earliest();
        const why = earliest !== undefined && version < earliest ? `it was pruned (the oldest kept is ${earliest})` : "it was never committed";
        throw new IavlError(earliest !== undefined && version < earliest ? "VERSION_PRUNED" : "VERSION_NOT_FOUND", `cannot roll back to version ${version}: ${why}`);
      }
      // Branches newer than the replay base were all written by checkpoints after `version`: a replay of the
      // kept versions recreates them, and the next checkpoint writes them again under the same keys.
      const base = store.replayBase(version)?.version ?? 0;
      const removed = db.prepare("DELETE FROM versions WHERE version > ?").run(version).changes;
      db.prepare("DELETE FROM kv WHERE version > ?").run(version);
      for (const id of db.prepare("SELECT id FROM shards WHERE last > ?").pluck().all(base) as number[]) {
        const t = shardTables(id);
        db.prepare(`DELETE FROM ${t.log} WHERE version > ?`).run(version);
        db.prepare(`DELETE FROM ${t.branch} WHERE version > ?`).run(base);
      }
      return removed;
    })
    .immediate();
}
