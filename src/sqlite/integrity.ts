/**
 * SQLite's own structure check of a store file (`PRAGMA integrity_check`): the B-trees, free lists and pointer maps
 * that the tree's hashes do not cover, since they hold no key or value of a version. The same check, with the tables
 * it must hold, tells whether a copy of a file restored from elsewhere (a Litestream replica) is whole.
 * @module
 */
import { sqliteCode } from "../base/errors.js";
import { MARKER_TABLES } from "./commit-marker.js";
import { openReader, type Connection } from "./connection.js";
import { STORE_TABLES } from "./store-stats.js";

/** Problems the check lists at most. */
const MAX_PROBLEMS = 20;

/** SQLite's structure check on an open connection: the lines it reports, "ok" and the schema headings left out. */
function integrityLines(db: Connection): string[] {
  const rows = db.pragma(`integrity_check(${MAX_PROBLEMS})`, { simple: false }) as Array<{ integrity_check: string }>;
  // One row may hold many lines, headed by the schema's name.
  const lines = rows.flatMap((r) => r.integrity_check.split("\n"));
  return lines.filter((line) => line !== "ok" && !/^\*\*\* in database \w+ \*\*\*$/.test(line)).slice(0, MAX_PROBLEMS);
}

/** The problems `check` finds on a read-only connection to `file`; a file SQLite cannot read is one problem. */
function problemsOf(file: string, check: (db: Connection) => string[]): string[] {
  try {
    const db = openReader(file);
    try {
      return check(db);
    } finally {
      db.close();
    }
  } catch (e) {
    return [`${sqliteCode(e) ?? (e as Error).name}: ${(e as Error).message}`];
  }
}

/** The problems SQLite finds in database `file` (none when it is sound). */
export function structureProblems(file: string): string[] {
  return problemsOf(file, integrityLines);
}

/**
 * What keeps `file`, a copy of a store's file or of a multi-store's commit marker (`kind`) restored from a replica,
 * from being whole (none when it is): SQLite's structure check, then the tables every such file holds. A copy whose
 * first page is older than the rest can pass the structure check as an empty database.
 */
export function copyProblems(file: string, kind: "store" | "marker"): string[] {
  return problemsOf(file, (db) => {
    const problems = integrityLines(db);
    if (problems.length > 0) return problems;
    const tables = new Set(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[]);
    const missing = (kind === "store" ? STORE_TABLES : MARKER_TABLES).filter((t) => !tables.has(t));
    return missing.length === 0 ? [] : [`no ${missing.join(", ")} table`];
  });
}
