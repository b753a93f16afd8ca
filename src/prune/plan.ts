/**
 * Which value rows a prune may delete: the rule, apart from the SQL that applies it.
 * @module
 */
import type { KeyRows } from "../sqlite/prune-rows.js";

/**
 * The versions of one key's rows (before keepFrom) that no kept version reads. A row is read by version b when it is
 * the newest at or before b. The versions that matter are the snapshots and, unless the key has a row at keepFrom
 * itself, keepFrom − 1 (what every later version falls back to). A removal row that no older kept row sits under is
 * dropped too: without it, reads find nothing, as they should.
 */
export function deadRows({ rows, rowAtKeep }: KeyRows, snapshots: number[], keepFrom: number): number[] {
  const bounds = rowAtKeep ? snapshots : [...snapshots, keepFrom - 1];
  const dead: number[] = [];
  let keptOlder = false;
  for (let i = 0; i < rows.length; i++) {
    const v = rows[i]!.version;
    const next = rows[i + 1]?.version ?? Number.POSITIVE_INFINITY;
    const needed = bounds.some((b) => v <= b && b < next);
    if (!needed || (rows[i]!.removed && !keptOlder)) dead.push(v);
    else keptOlder = true;
  }
  return dead;
}
