/**
 * Which leaves rows a sweep may delete: the rule, apart from the SQL that applies it.
 * @module
 */
import type { KeyRows } from "../sqlite/prune-rows.js";

/**
 * The versions of one key's rows (all at or before the sweep's bound) that nothing kept reads. A row is read by a
 * bound b (a kept snapshot, or the version replays start from, whose tree kept versions build on) when it is the
 * newest at or before b. A removal row that no older kept row sits under is dead too (without it, reads find nothing,
 * as they should), unless its own version is kept: that version's changes are read from its rows.
 */
export function deadRows({ rows }: KeyRows, bounds: readonly number[], kept: (version: number) => boolean): number[] {
  const dead: number[] = [];
  let keptOlder = false;
  for (let i = 0; i < rows.length; i++) {
    const v = rows[i]!.version;
    const next = rows[i + 1]?.version ?? Number.POSITIVE_INFINITY;
    const needed = bounds.some((b) => v <= b && b < next);
    if (!needed || (rows[i]!.removed && !keptOlder && !kept(v))) dead.push(v);
    else keptOlder = true;
  }
  return dead;
}
