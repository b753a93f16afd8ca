/**
 * SQLite's own structure check of a store file (`PRAGMA integrity_check`): the B-trees, free lists and pointer maps
 * that the tree's hashes do not cover, since they hold no key or value of a version.
 * @module
 */
import { sqliteCode } from "../base/errors.js";
import { openReader } from "./connection.js";

/** Problems the check lists at most. */
const MAX_PROBLEMS = 20;

/** The problems SQLite finds in database `file` (none when it is sound); a file it cannot read is one problem. */
export function structureProblems(file: string): string[] {
  try {
    const db = openReader(file);
    try {
      const rows = db.pragma(`integrity_check(${MAX_PROBLEMS})`, { simple: false }) as Array<{ integrity_check: string }>;
      // One row may hold many lines, headed by the schema's name.
      const lines = rows.flatMap((r) => r.integrity_check.split("\n"));
      return lines.filter((line) => line !== "ok" && !/^\*\*\* in database \w+ \*\*\*$/.test(line)).slice(0, MAX_PROBLEMS);
    } finally {
      db.close();
    }
  } catch (e) {
    return [`${sqliteCode(e) ?? (e as Error).name}: ${(e as Error).message}`];
  }
}
