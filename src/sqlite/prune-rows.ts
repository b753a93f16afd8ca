/**
 * The SQL of a prune's steps (the steps themselves, and their order, are src/prune's): each a bounded amount of work
 * in short transactions, so that the writer's commits never wait long for the database.
 * @module
 */
import { sql, forgetStatements, type Connection } from "./connection.js";
import { metaNumber, setMeta } from "./meta.js";
import { dropEmptyShards, orphansFrom } from "./orphaned-branches.js";
import { IavlError } from "../base/errors.js";
import type { BranchRow } from "./rows.js";
import { compactedTable, createBranchTable, dropBranchTable, insertBranch, shardTable } from "./shards.js";
import { StoreReader } from "./store-reader.js";
import { passiveWalCheckpoint } from "./wal.js";
import type { ReplayBase } from "./version-reader.js";
import { rowCount } from "./version-ops.js";
import { retryBusy, writeTransaction } from "./write-errors.js";

/** What a prune will do, decided in its first step. */
export interface PrunePlan {
  /** The first version kept (besides snapshots). */
  keepFrom: number;
  /** Versions before keepFrom kept as snapshots (every keepEvery-th), each a checkpoint; oldest first. */
  snapshots: number[];
  /** The checkpoint kept versions replay from (its row may itself be pruned). */
  base: ReplayBase | undefined;
  /**
   * Shards wholly at or before the base that hold branches replaced before orphans were recorded (a store made
   * before migration 003): their survivors move to the compacted tables and they are dropped.
   */
  dropShards: number[];
  /** The first version whose orphaned branches are recorded (see orphaned-branches.ts). */
  orphansFrom: number;
  /** The last version whose node rows will live in the compacted tables. */
  compactThrough: number;
  /** Generation of the compacted tables to build. */
  gen: number;
  /** Versions removed. */
  removed: number;
  /** Snapshots kept by an earlier prune that this one drops: their rows need a sweep of every key. */
  droppedSnapshots: boolean;
}

/**
 * Removes version rows below min(upTo + 1, latest), except, with `keepEvery`, the checkpointed versions that are
 * multiples of it, and plans the rest. Readers get VERSION_PRUNED for the removed versions from here on. The removal
 * rows an earlier prune kept because their version was its first kept one go with that version's row.
 */
export function markPruned(db: Connection, upTo: number, keepEvery: number | undefined): PrunePlan {
  const store = new StoreReader(db);
  return writeTransaction(db, "pruning", (): PrunePlan => {
    const latest = store.versions.latest()?.version ?? 0;
    const asked = Math.min(upTo + 1, latest);
    const prunedTo = metaNumber(db, "pruned_to") ?? 0;
    // An earlier prune may have gone further: the store stays pruned to there (its base, and how far values and
    // operations went, never move back), and the versions left below it are its snapshots.
    const keepFrom = Math.max(asked, prunedTo + 1);
    // Read before the deletions below take the checkpoint rows it looks at.
    const base = store.versions.replayBase(keepFrom);
    const earlier = sql(db, "SELECT version FROM versions WHERE version <= ?").pluck().all(prunedTo) as number[];
    // The last version an earlier prune's values step went through may have been kept then (its first kept version,
    // and the version replays start from): its removal rows stayed. Read before its row goes below.
    const swept = metaNumber(db, "leaves_pruned_to");
    const sweptRow = swept === undefined ? undefined : store.versions.row(swept);
    const removed =
      keepEvery === undefined
        ? sql(db, "DELETE FROM versions WHERE version < ?").run(asked).changes
        : sql(db, "DELETE FROM versions WHERE version < ? AND NOT (checkpoint = 1 AND version % ? = 0)").run(asked, keepEvery).changes;
    const snapshots = sql(db, "SELECT version FROM versions WHERE version < ? ORDER BY version").pluck().all(keepFrom) as number[];
    // Pruned now, that version's removals with no older row of their key under them hide nothing (see plan.ts):
    // deleted with its version row, so that no crash leaves them behind for good.
    if (sweptRow?.firstLeaf != null && sweptRow.leafRows != null && store.versions.row(sweptRow.version) === undefined) {
      sql(
        db,
        `DELETE FROM leaves WHERE id >= ? AND id < ? AND version = ? AND hash IS NULL
           AND NOT EXISTS (SELECT 1 FROM leaves AS older WHERE older.key = leaves.key AND older.version < leaves.version)`,
      ).run(sweptRow.firstLeaf, sweptRow.firstLeaf + sweptRow.leafRows, sweptRow.version);
    }
    // Recorded even when the base is itself kept: a base recorded earlier names a tree whose branches this prune may
    // delete (replays never use it once a newer checkpoint is kept, but nothing should name what is gone).
    if (base !== undefined) {
      setMeta(db, "base_version", base.version);
      setMeta(db, "base_root_version", base.rootVersion);
      setMeta(db, "base_root_seq", base.rootSeq);
    }
    setMeta(db, "pruned_to", keepFrom - 1);
    const limit = base?.version ?? 0;
    // A shard can go when every version in it is at or before the base: replays start after the base. One whose
    // orphans are all recorded empties as they are deleted; an older one is copied out and dropped.
    const from = orphansFrom(db);
    const dropShards = sql(db, "SELECT id FROM shards WHERE last <= ? AND first < ? ORDER BY id").pluck().all(limit, from) as number[];
    const compactThrough = dropShards.length > 0 ? (dropShards[dropShards.length - 1]! + 1) * store.branches.shardSize - 1 : -1;
    const gen = (metaNumber(db, "compact_gen") ?? 0) + 1;
    // Owed by an earlier prune that dropped snapshots and stopped before its sweeps ended: once its first step
    // committed, no later prune could tell that snapshots went.
    const droppedSnapshots = earlier.some((v) => !snapshots.includes(v)) || metaNumber(db, "snapshot_sweep_owed") === 1;
    if (droppedSnapshots) setMeta(db, "snapshot_sweep_owed", 1);
    return { keepFrom, snapshots, base, dropShards, orphansFrom: from, compactThrough, gen, removed, droppedSnapshots };
  });
}

/** Records that the sweeps a prune that dropped snapshots owes are done (see {@link markPruned}). */
export function snapshotsSwept(db: Connection): void {
  setMeta(db, "snapshot_sweep_owed", null);
}

/** One key's rows at or before the bound of a sweep, oldest first, as {@link sweepLeaves} hands them to its judge. */
export interface KeyRows {
  rows: Array<{ version: number; removed: boolean }>;
}

/** Given one key's rows, the versions of those nothing kept reads. */
export type DeadRows = (key: KeyRows) => number[];

/**
 * Deletes the leaves rows that versions (previous bound, `through`] made dead, in one transaction that takes versions
 * until it has gone through `maxRows` of their rows, and their operations (replays start after `through`): each row
 * of such a version makes its key's previous row dead unless a snapshot at or after that row and before the version
 * reads it, and a removal row dies once no older row of its key is left to hide (unless its version is kept: its
 * changes are read from its rows). Rows of a tree still in use (the newest at or before `through`, or a snapshot's)
 * stay. Returns true when it reached `through`.
 */
export function pruneLeaves(db: Connection, through: number, keepFrom: number, snapshots: number[], maxRows: number): boolean {
  const store = new StoreReader(db);
  const from = (metaNumber(db, "leaves_pruned_to") ?? store.versions.first() - 1) + 1;
  if (from > through) return true;
  const prev = sql(db, "SELECT id, version FROM leaves WHERE key = ? AND version < ? ORDER BY version DESC LIMIT 1").raw();
  const del = sql(db, "DELETE FROM leaves WHERE id = ?");
  // One transaction, not one a version: each transaction waits for the writer's turn, and under a churn of 2,500
  // changes a version a step of 16 one-version transactions took 3-4 s.
  let next = from;
  writeTransaction(db, "pruning values", () => {
    let v = from;
    for (let rows = 0; v <= through && rows < maxRows; v++) {
      const vo = store.versions.ops(v);
      if (vo !== undefined) {
        const kept = v >= keepFrom || snapshots.includes(v);
        if (snapshots.length === 0) dropSuperseded(db, vo.firstLeaf, vo.firstLeaf + rowCount(vo.ops), !kept);
        else {
          for (const op of vo.ops) {
            if (op.row === undefined) continue;
            const p = prev.get(op.key, v) as [number, number] | undefined;
            if (p !== undefined && !snapshots.some((s) => p[1] <= s && s < v)) del.run(p[0]);
            // A removal only hides older rows: with none left (a snapshot may keep one), it goes too.
            if (!op.set && !kept && prev.get(op.key, v) === undefined) del.run(vo.firstLeaf + op.row);
          }
        }
        rows += vo.ops.length;
      }
      sql(db, "DELETE FROM version_ops WHERE version = ?").run(v);
    }
    if (v > from) setMeta(db, "leaves_pruned_to", v - 1);
    next = v;
  });
  return next > through;
}

/**
 * With no snapshot kept: deletes the previous row of each key of the leaves rows `[first, end)` (one version's), and
 * with `removals`, those rows' removals that have no older row left to hide. SQLite finds them itself: a statement
 * per change cost about as much in calls as in seeks.
 */
function dropSuperseded(db: Connection, first: number, end: number, removals: boolean): void {
  sql(
    db,
    `DELETE FROM leaves WHERE id IN (SELECT (SELECT p.id FROM leaves AS p WHERE p.key = l.key AND p.version < l.version ORDER BY p.version DESC LIMIT 1)
       FROM leaves AS l WHERE l.id >= ? AND l.id < ?)`,
  ).run(first, end);
  if (!removals) return;
  sql(
    db,
    `DELETE FROM leaves WHERE id >= ? AND id < ? AND hash IS NULL
       AND NOT EXISTS (SELECT 1 FROM leaves AS older WHERE older.key = leaves.key AND older.version < leaves.version)`,
  ).run(first, end);
}

/**
 * The slow way, for when snapshots were dropped (their rows are no version's predecessor any more): in key order from
 * key `from`, deletes the leaves rows at or before `through` that `dead` names, one page of keys per transaction.
 * Returns the key to continue from, or undefined when done.
 */
export function sweepLeaves(db: Connection, through: number, from: Uint8Array | undefined, dead: DeadRows, pageRows = 4000): Uint8Array | undefined {
  const rows = sql(db, `SELECT key, version, hash IS NULL, id FROM leaves WHERE ${from === undefined ? "1" : "key >= ?"} AND version <= ? ORDER BY key, version LIMIT ?`)
    .raw()
    .all(...(from === undefined ? [] : [from]), through, pageRows) as Array<[Uint8Array, number, number, number]>;
  if (rows.length === 0) return undefined;
  // The last key of a full page may continue on the next page: leave it for then.
  const full = rows.length === pageRows;
  const lastKey = rows[rows.length - 1]![0];
  if (full && Buffer.compare(rows[0]![0], lastKey) === 0) {
    throw new IavlError("CORRUPT", `key ${Buffer.from(lastKey).toString("hex")} has more than ${pageRows} rows`);
  }
  const del = sql(db, "DELETE FROM leaves WHERE id = ?");
  writeTransaction(db, "pruning values", () => {
    let i = 0;
    while (i < rows.length) {
      const key = rows[i]![0];
      if (full && Buffer.compare(key, lastKey) === 0) break;
      const group: KeyRows = { rows: [] };
      const ids = new Map<number, number>();
      for (; i < rows.length && Buffer.compare(rows[i]![0], key) === 0; i++) {
        group.rows.push({ version: rows[i]![1], removed: rows[i]![2] === 1 });
        ids.set(rows[i]![1], rows[i]![3]);
      }
      for (const v of dead(group)) del.run(ids.get(v)!);
    }
  });
  return full ? lastKey : undefined;
}

/** Creates the compacted table of generation `gen` empty (dropping a half-built one), so that a repeated step starts clean. */
export function startCompaction(db: Connection, gen: number): void {
  dropBranchTable(db, compactedTable(gen));
  createBranchTable(db, compactedTable(gen));
}

/** Writes surviving branches into the compacted table of generation `gen`, in one transaction. */
export function writeCompacted(db: Connection, gen: number, branches: BranchRow[]): void {
  const table = compactedTable(gen);
  writeTransaction(db, "copying the survivors of pruned shards", () => {
    for (const b of branches) insertBranch(db, table, b);
  });
}

/**
 * The new compacted generation replaces the old one and the pruned shards, and the shards left empty go, in one
 * transaction. Returns the shards dropped.
 */
export function swapShards(db: Connection, plan: PrunePlan): number {
  const dropped = writeTransaction(db, "dropping pruned shards", () => {
    const old = metaNumber(db, "compact_gen") ?? 0;
    if (plan.compactThrough >= 0) {
      setMeta(db, "compact_gen", plan.gen);
      setMeta(db, "compact_through", plan.compactThrough);
      dropBranchTable(db, compactedTable(old));
      for (const id of plan.dropShards) {
        dropBranchTable(db, shardTable(id));
        sql(db, "DELETE FROM shards WHERE id = ?").run(id);
      }
    } else {
      dropBranchTable(db, compactedTable(plan.gen));
    }
    return (plan.compactThrough >= 0 ? plan.dropShards.length : 0) + dropEmptyShards(db, plan.base?.version ?? 0, plan.orphansFrom);
  });
  forgetStatements(db);
  return dropped;
}

/**
 * Returns up to `pages` free pages to the file system; returns how many remain free, or 0 once the rest may stay.
 * Once none remain, the WAL is checkpointed (without waiting for anyone), which is when the database file itself
 * shrinks, unless `ownWal` is false: another process (Litestream) checkpoints it, and a checkpoint of ours could
 * make it miss frames. While free pages are at most `keepFree` of the file, none are returned: the next commits reuse them, and
 * moving pages from the end of the file into them (what an incremental vacuum does) would write each page again,
 * twice over with the WAL.
 */
export function reclaim(db: Connection, ownWal: boolean, pages = 2048, keepFree = 0): number {
  const free = (): number => db.pragma("freelist_count", { simple: true }) as number;
  if (keepFree > 0 && free() <= keepFree * (db.pragma("page_count", { simple: true }) as number)) return 0;
  retryBusy(db, "returning free pages", () => db.pragma(`incremental_vacuum(${pages})`));
  const left = free();
  if (left === 0 && ownWal) passiveWalCheckpoint(db);
  return left;
}
