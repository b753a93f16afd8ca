/**
 * Orphaned branches (`orphaned_branches`): each version's row names the stored branches (and, in layout 3, the pages,
 * by the node key of their root) its changes replaced or its checkpoint moved into new pages, and a
 * prune deletes those that no kept tree reads any more, so that branch rows leave as the tree stops needing them
 * rather than with their whole shard. A shard left empty is then dropped.
 * @module
 */
import { concatBytes } from "../base/bytes.js";
import { sql, type Connection } from "./connection.js";
import { metaNumber, setMeta } from "./meta.js";
import { BranchReader } from "./branch-reader.js";
import { dropBranchTable, isPageSeq, pageOfSeq, shardTable } from "./shards.js";
import { deletePage, pageVersion } from "./page-rows.js";
import { writeTransaction } from "./write-errors.js";

/** Bytes of one packed node key: version and sequence, each a little-endian float64 (versions are safe integers). */
export const KEY_BYTES = 16;

/** Node keys `[version, seq, version, seq, …]` packed for an `orphaned_branches` row. */
export function packNodeKeys(keys: readonly number[]): Uint8Array {
  const out = new Uint8Array((keys.length / 2) * KEY_BYTES);
  const view = new DataView(out.buffer);
  for (let i = 0; i < keys.length; i++) view.setFloat64(i * 8, keys[i]!, true);
  return out;
}

/** The node keys of an `orphaned_branches` row, as {@link packNodeKeys} packed them. */
export function unpackNodeKeys(b: Uint8Array): number[] {
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const out = new Array<number>(b.byteLength / 8);
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat64(i * 8, true);
  return out;
}

/**
 * Records the stored branches and pages `version` replaced (nothing when it replaced none), after those recorded
 * already: a checkpoint written after its version (at close) adds the pages it moved nodes out of.
 */
export function insertOrphans(db: Connection, version: number, nodes: Uint8Array): void {
  if (nodes.length === 0) return;
  // Joined here, not with SQL's ||, which makes text of blobs.
  const had = sql(db, "SELECT nodes FROM orphaned_branches WHERE version = ?").pluck().get(version) as Uint8Array | undefined;
  const all = had === undefined ? nodes : concatBytes(had, nodes);
  sql(db, "INSERT OR REPLACE INTO orphaned_branches (version, nodes) VALUES (?, ?)").run(version, all);
}

/** The first version whose orphans are recorded; branches replaced before it go only with their shard. */
export function orphansFrom(db: Connection): number {
  return metaNumber(db, "orphans_from") ?? 1;
}

/**
 * Deletes the branches orphaned by versions after `after` up to `through` (the replay base: no tree kept versions
 * replay from holds them), except those a kept snapshot's tree still holds (a branch of version n orphaned at version
 * o is in the trees of n … o − 1); their node keys stay recorded for the prune that drops the snapshot. `after`
 * undefined: after the last version a prune went through (a prune that drops snapshots passes 0, to find theirs). One
 * transaction of about `maxNodes` deletes; returns the version to continue after, or undefined when none is left.
 */
export function pruneBranches(db: Connection, through: number, snapshots: readonly number[], after: number | undefined, maxNodes = 20_000): number | undefined {
  const done = metaNumber(db, "branches_pruned_to") ?? 0;
  const start = after ?? done;
  const rows = sql(db, "SELECT version, nodes FROM orphaned_branches WHERE version > ? AND version <= ? ORDER BY version LIMIT 256")
    .raw()
    .all(start, through) as Array<[number, Uint8Array]>;
  if (rows.length === 0) return undefined;
  const branches = new BranchReader(db);
  const tables = new Set(sql(db, "SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[]);
  let last = start;
  writeTransaction(db, "pruning branches", () => {
    const doomed: Array<[number, number]> = [];
    for (const [at, packed] of rows) {
      if (doomed.length >= maxNodes) break;
      const keys = unpackNodeKeys(packed);
      const kept: number[] = [];
      for (let i = 0; i < keys.length; i += 2) {
        const version = keys[i]!;
        const seq = keys[i + 1]!;
        // A page is in the checkpoint trees from the one that wrote it (its root may be older: a page is rewritten
        // when its boundary moves), which its row records.
        const from = isPageSeq(seq) ? pageVersion(db, pageOfSeq(seq)) ?? at : version;
        if (snapshots.some((s) => from <= s && s < at)) kept.push(version, seq);
        else doomed.push([version, seq]);
      }
      if (kept.length === 0) sql(db, "DELETE FROM orphaned_branches WHERE version = ?").run(at);
      else if (kept.length < keys.length) sql(db, "UPDATE orphaned_branches SET nodes = ? WHERE version = ?").run(packNodeKeys(kept), at);
      last = at;
    }
    // In key order, so that deletes walk each table's pages once instead of jumping between them.
    doomed.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    for (const [version, seq] of doomed) {
      if (isPageSeq(seq)) {
        deletePage(db, pageOfSeq(seq));
        continue;
      }
      const table = branches.tableFor(version);
      // A table already gone took the row with it.
      if (tables.has(table)) sql(db, `DELETE FROM ${table} WHERE version = ? AND seq = ?`).run(version, seq);
    }
    if (last > done) setMeta(db, "branches_pruned_to", last);
  });
  return last;
}

/**
 * Drops the shards whose versions are all at or before `limit` (no new branch can land in them) and that hold no row
 * any more, among those starting at or after `from` (the first version whose orphans are recorded: older shards go
 * by the survivor copy). Runs in the caller's transaction; returns how many went.
 */
export function dropEmptyShards(db: Connection, limit: number, from: number): number {
  let dropped = 0;
  for (const id of sql(db, "SELECT id FROM shards WHERE last <= ? AND first >= ? ORDER BY id").pluck().all(limit, from) as number[]) {
    const table = shardTable(id);
    const exists = sql(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").pluck().get(table) !== undefined;
    if (exists && sql(db, `SELECT 1 FROM ${table} LIMIT 1`).pluck().get() !== undefined) continue;
    dropBranchTable(db, table);
    sql(db, "DELETE FROM shards WHERE id = ?").run(id);
    dropped++;
  }
  return dropped;
}
