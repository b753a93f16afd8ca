/**
 * The rows of checkpoints past a replay base: those of a checkpoint written over several commits that never ended (a
 * crash, a kill), or of checkpoints a rollback undoes. No tree from the base on reads them, and a replay of the
 * versions after the base numbers the same nodes again, so they go, with the records of them among the orphans.
 * @module
 */
import { sql, type Connection } from "./connection.js";
import { insertOrphans, packNodeKeys, unpackNodeKeys } from "./orphaned-branches.js";
import { isPageSeq, shardTable } from "./shards.js";
import { StoreReader } from "./store-reader.js";
import { writeTransaction } from "./write-errors.js";

/**
 * Deletes the branch rows and pages written for checkpoints after `base`, and the records of such branches among the
 * orphans of versions after it (a page's id is never given again, so a record of a deleted page names nothing).
 */
export function dropCheckpointsAfter(db: Connection, base: number): void {
  let dropped = sql(db, "DELETE FROM pages WHERE version > ?").run(base).changes;
  for (const id of sql(db, "SELECT id FROM shards WHERE last > ?").pluck().all(base) as number[]) {
    dropped += sql(db, `DELETE FROM ${shardTable(id)} WHERE version > ?`).run(base).changes;
  }
  if (dropped === 0) return;
  const update = sql(db, "UPDATE orphaned_branches SET nodes = ? WHERE version = ?");
  const remove = sql(db, "DELETE FROM orphaned_branches WHERE version = ?");
  for (const [version, nodes] of sql(db, "SELECT version, nodes FROM orphaned_branches WHERE version > ?").raw().all(base) as Array<[number, Uint8Array]>) {
    const keys = unpackNodeKeys(nodes);
    const kept: number[] = [];
    for (let i = 0; i < keys.length; i += 2) if (keys[i]! <= base || isPageSeq(keys[i + 1]!)) kept.push(keys[i]!, keys[i + 1]!);
    if (kept.length === keys.length) continue;
    if (kept.length === 0) remove.run(version);
    else update.run(packNodeKeys(kept), version);
  }
}

/**
 * Before a writer's first commit: the replay base of the latest version if rows of a checkpoint past it are stored,
 * those of a checkpoint written over several commits that a crash cut short (every node stored before the base of the
 * latest version is in a checkpoint that ended); undefined when there are none.
 */
export function unfinishedCheckpoint(db: Connection): number | undefined {
  const store = new StoreReader(db);
  const latest = store.versions.latest()?.version;
  if (latest === undefined) return undefined;
  const base = store.versions.replayBase(latest)?.version ?? 0;
  const leftover =
    sql(db, "SELECT 1 FROM pages WHERE version > ? LIMIT 1").get(base) !== undefined ||
    (sql(db, "SELECT id FROM shards WHERE last > ?").pluck().all(base) as number[]).some(
      (id) => sql(db, `SELECT 1 FROM ${shardTable(id)} WHERE version > ? LIMIT 1`).get(base) !== undefined,
    );
  return leftover ? base : undefined;
}

/**
 * Removes the rows of the checkpoint {@link unfinishedCheckpoint} found past `base`, and in the same transaction adds
 * to each version's orphans the stored nodes (`[version, seq, …]`) that `replaced` says its replay from `base`
 * replaced, those not recorded already. The checkpoint had moved clean pages into new ones (it records the old ones
 * only when it ends), and the versions after its steps recorded the new pages when they replaced their nodes: with
 * the new pages gone, nothing recorded the old ones, and no prune ever removed them.
 */
export function dropUnfinishedCheckpoint(db: Connection, base: number, replaced: ReadonlyMap<number, readonly number[]>): void {
  writeTransaction(db, "removing the rows of a checkpoint a crash cut short", () => {
    dropCheckpointsAfter(db, base);
    const had = sql(db, "SELECT nodes FROM orphaned_branches WHERE version = ?").pluck();
    for (const [version, keys] of replaced) {
      const row = had.get(version) as Uint8Array | undefined;
      const known = new Set<string>();
      const old = row === undefined ? [] : unpackNodeKeys(row);
      for (let i = 0; i < old.length; i += 2) known.add(`${old[i]}/${old[i + 1]}`);
      const missing: number[] = [];
      for (let i = 0; i < keys.length; i += 2) if (!known.has(`${keys[i]}/${keys[i + 1]}`)) missing.push(keys[i]!, keys[i + 1]!);
      insertOrphans(db, version, packNodeKeys(missing));
    }
  });
}
