/**
 * Migration 007's conversion, frozen with it: the `kids` column on every branch table (shards and compacted tables
 * alike). Adding a nullable column rewrites no row.
 * @module
 */
import type Database from "better-sqlite3";

/** Adds `kids` to each branch table that lacks it. */
export function addBranchKids(db: Database.Database): void {
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'branch\\_%' ESCAPE '\\'").pluck().all() as string[];
  for (const table of tables) {
    const columns = db.prepare(`SELECT name FROM pragma_table_info(?)`).pluck().all(table) as string[];
    if (!columns.includes("kids")) db.exec(`ALTER TABLE ${table} ADD COLUMN kids BLOB`);
  }
}
