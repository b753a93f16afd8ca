/**
 * The store's `meta` table: settings fixed at creation (shard size, first version) and facts that pruning, imports
 * and rollbacks record (what was pruned, where compacted rows live, which versions a rollback replaced).
 * @module
 */
import { sql, type Connection } from "./connection.js";

/** Names of the meta rows. */
export type MetaName =
  | "shard_size"
  | "first_version"
  | "pruned_to"
  | "base_version"
  | "base_root_version"
  | "base_root_seq"
  | "compact_gen"
  | "compact_through"
  | "leaves_pruned_to"
  | "orphans_from"
  | "branches_pruned_to"
  /** 1 while a prune that dropped snapshots has not yet swept what they alone held (a stopped prune owes it). */
  | "snapshot_sweep_owed"
  | "rollbacks";

/** A meta value as a number; undefined when the row is missing or NULL. */
export function metaNumber(db: Connection, name: MetaName): number | undefined {
  const v = sql(db, "SELECT value FROM meta WHERE name = ?").pluck().get(name);
  return v === undefined || v === null ? undefined : Number(v);
}

/** Sets a meta value. */
export function setMeta(db: Connection, name: MetaName, value: number | null): void {
  sql(db, "INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)").run(name, value);
}

/** Sets a meta value unless it is set already (settings fixed at creation). */
export function initMeta(db: Connection, name: MetaName, value: number): void {
  sql(db, "INSERT OR IGNORE INTO meta (name, value) VALUES (?, ?)").run(name, value);
}

/** Every meta row, for `iavlite info`. */
export function allMeta(db: Connection): Record<string, string | number | null> {
  const out: Record<string, string | number | null> = {};
  for (const m of sql(db, "SELECT name, value FROM meta ORDER BY name").all() as Array<{ name: string; value: unknown }>) {
    const v = m.value;
    out[m.name] = typeof v === "string" || typeof v === "number" ? v : typeof v === "bigint" ? Number(v) : v === null ? null : String(v);
  }
  return out;
}

/**
 * Records a rollback to `target` (in the rollback's transaction): rollback number n is the row `rollback_n`, so that a
 * reader can tell whether a version it reads was replaced since it began.
 */
export function recordRollback(db: Connection, target: number): void {
  const n = (metaNumber(db, "rollbacks") ?? 0) + 1;
  setMeta(db, "rollbacks", n);
  sql(db, "INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)").run(`rollback_${n}`, target);
}

/** Rollbacks recorded so far: a reader notes it when it starts reading a version. */
export function rollbackCount(db: Connection): number {
  return metaNumber(db, "rollbacks") ?? 0;
}

/** True when a rollback after the first `since` ones went below `version`, replacing it. */
export function rolledBackSince(db: Connection, since: number, version: number): boolean {
  const n = rollbackCount(db);
  for (let i = since + 1; i <= n; i++) {
    const target = sql(db, "SELECT value FROM meta WHERE name = ?").pluck().get(`rollback_${i}`);
    if (target !== undefined && target !== null && Number(target) < version) return true;
  }
  return false;
}
