/**
 * The SQL of a prune's steps (the steps themselves, and their order, are src/prune's): each a bounded amount of work
 * in short transactions, so that the writer's commits never wait long for the database.
 * @module
 */
import { sql, forgetStatements, type Connection } from "./connection.js";
import { metaNumber, setMeta } from "./meta.js";
import type { BranchRow, LeafRow } from "./rows.js";
import { compactedTables, createNodeTables, dropNodeTables, insertBranch, insertLeaf, shardTables } from "./shards.js";
import { StoreReader, type ReplayBase } from "./store-reader.js";
import { retryBusy, writeTransaction } from "./write-errors.js";

/** What a prune will do, decided in its first step. */
export interface PrunePlan {
  /** The first version kept (besides snapshots). */
  keepFrom: number;
  /** Versions before keepFrom kept as snapshots (every keepEvery-th), each a checkpoint; oldest first. */
  snapshots: number[];
  /** The checkpoint kept versions replay from (its row may itself be pruned). */
  base: ReplayBase | undefined;
  /** Shards wholly at or before the base: their survivors move to the compacted tables and they are dropped. */
  dropShards: number[];
  /** The last version whose node rows will live in the compacted tables. */
  compactThrough: number;
  /** Generation of the compacted tables to build. */
  gen: number;
  /** Versions removed. */
  removed: number;
}

/**
 * Removes version rows below `keepFrom` = min(upTo + 1, latest), except, with `keepEvery`, the checkpointed versions
 * that are multiples of it, and plans the rest. Readers get VERSION_PRUNED for the removed versions from here on.
 */
export function markPruned(db: Connection, upTo: number, keepEvery: number | undefined): PrunePlan {
  const store = new StoreReader(db);
  return writeTransaction(db, "pruning", (): PrunePlan => {
    const latest = store.latest()?.version ?? 0;
    const keepFrom = Math.min(upTo + 1, latest);
    const cp = sql(db, "SELECT version, root_version, root_seq FROM versions WHERE checkpoint = 1 AND version <= ? ORDER BY version DESC LIMIT 1")
      .raw()
      .get(keepFrom) as [number, number | null, number | null] | undefined;
    const base = cp !== undefined ? { version: cp[0], rootVersion: cp[1], rootSeq: cp[2] } : store.recordedBase();
    const snapshots =
      keepEvery === undefined
        ? []
        : (sql(db, "SELECT version FROM versions WHERE version < ? AND checkpoint = 1 AND version % ? = 0 ORDER BY version").pluck().all(keepFrom, keepEvery) as number[]);
    const removed =
      snapshots.length === 0
        ? sql(db, "DELETE FROM versions WHERE version < ?").run(keepFrom).changes
        : db.prepare(`DELETE FROM versions WHERE version < ? AND version NOT IN (${snapshots.join(",")})`).run(keepFrom).changes;
    if (base !== undefined && base.version < keepFrom) {
      setMeta(db, "base_version", base.version);
      setMeta(db, "base_root_version", base.rootVersion);
      setMeta(db, "base_root_seq", base.rootSeq);
    }
    setMeta(db, "pruned_to", keepFrom - 1);
    const limit = base?.version ?? 0;
    // A shard can go when every version in it is at or before the base: replays start after the base.
    const dropShards = sql(db, "SELECT id FROM shards WHERE last <= ? ORDER BY id").pluck().all(limit) as number[];
    const compactThrough = dropShards.length > 0 ? (dropShards[dropShards.length - 1]! + 1) * store.shardSize - 1 : -1;
    const gen = (metaNumber(db, "compact_gen") ?? 0) + 1;
    return { keepFrom, snapshots, base, dropShards, compactThrough, gen, removed };
  });
}

/** One key's rows before keepFrom, oldest first, as {@link trimValues} hands them to its judge. */
export interface KeyRows {
  rows: Array<{ version: number; removed: boolean }>;
  /** True when the key also has a row at keepFrom itself. */
  rowAtKeep: boolean;
}

/** Given one key's rows, the versions of those no kept version reads. */
export type DeadRows = (key: KeyRows) => number[];

/**
 * Deletes, in key order from key `from`, the value rows that `dead` names, one page of keys per transaction.
 * Returns the key to continue from, or undefined when done.
 */
export function trimValues(db: Connection, keepFrom: number, from: Uint8Array | undefined, dead: DeadRows, pageRows = 4000): Uint8Array | undefined {
  const rows = sql(db, `SELECT key, version, value IS NULL FROM kv WHERE ${from === undefined ? "1" : "key >= ?"} AND version <= ? ORDER BY key, version LIMIT ?`)
    .raw()
    .all(...(from === undefined ? [] : [from]), keepFrom, pageRows) as Array<[Uint8Array, number, number]>;
  if (rows.length === 0) return undefined;
  // The last key of a full page may continue on the next page: leave it for then.
  const full = rows.length === pageRows;
  const lastKey = rows[rows.length - 1]![0];
  const del = sql(db, "DELETE FROM kv WHERE key = ? AND version = ?");
  writeTransaction(db, "pruning values", () => {
    let i = 0;
    while (i < rows.length) {
      const key = rows[i]![0];
      if (full && Buffer.compare(key, lastKey) === 0) break;
      const group: KeyRows = { rows: [], rowAtKeep: false };
      for (; i < rows.length && Buffer.compare(rows[i]![0], key) === 0; i++) {
        if (rows[i]![1] === keepFrom) group.rowAtKeep = true;
        else group.rows.push({ version: rows[i]![1], removed: rows[i]![2] === 1 });
      }
      for (const v of dead(group)) del.run(key, v);
    }
  });
  if (!full) return undefined;
  if (Buffer.compare(rows[0]![0], lastKey) === 0) {
    // One key has more rows than a page: trim it alone, then move past it.
    writeTransaction(db, "pruning values", () => {
      const all = sql(db, "SELECT version, value IS NULL FROM kv WHERE key = ? AND version <= ? ORDER BY version").raw().all(lastKey, keepFrom) as Array<[number, number]>;
      const group: KeyRows = {
        rows: all.filter(([v]) => v < keepFrom).map(([version, n]) => ({ version, removed: n === 1 })),
        rowAtKeep: all.some(([v]) => v === keepFrom),
      };
      for (const v of dead(group)) del.run(lastKey, v);
    });
    return Buffer.concat([lastKey, Buffer.from([0])]);
  }
  return lastKey;
}

/** Creates the compacted tables of generation `gen` empty (dropping a half-built one), so that a repeated step starts clean. */
export function startCompaction(db: Connection, gen: number): void {
  const t = compactedTables(gen);
  dropNodeTables(db, t);
  createNodeTables(db, t);
}

/** Writes surviving nodes into the compacted tables of generation `gen`, in one transaction. */
export function writeCompacted(db: Connection, gen: number, leaves: LeafRow[], branches: BranchRow[]): void {
  const t = compactedTables(gen);
  writeTransaction(db, "copying the survivors of pruned shards", () => {
    for (const l of leaves) insertLeaf(db, t, l);
    for (const b of branches) insertBranch(db, t, b);
  });
}

/** The new compacted generation replaces the old one and the pruned shards, in one transaction. */
export function swapShards(db: Connection, plan: PrunePlan): void {
  writeTransaction(db, "dropping pruned shards", () => {
    const old = metaNumber(db, "compact_gen") ?? 0;
    if (plan.compactThrough >= 0) {
      setMeta(db, "compact_gen", plan.gen);
      setMeta(db, "compact_through", plan.compactThrough);
      dropNodeTables(db, compactedTables(old));
      for (const id of plan.dropShards) {
        dropNodeTables(db, shardTables(id));
        sql(db, "DELETE FROM shards WHERE id = ?").run(id);
      }
    } else {
      dropNodeTables(db, compactedTables(plan.gen));
    }
  });
  forgetStatements(db);
}

/** Returns up to `pages` free pages to the file system; returns how many remain free. */
export function reclaim(db: Connection, pages = 2048): number {
  retryBusy(db, "returning free pages", () => db.pragma(`incremental_vacuum(${pages})`));
  return db.pragma("freelist_count", { simple: true }) as number;
}
