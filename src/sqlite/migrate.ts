/**
 * Numbered SQL migrations from `migrations/`, applied in order on open and recorded in the store.
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type Database from "better-sqlite3";
import { IavlError } from "../base/errors.js";
import { packageFile } from "../base/package-files.js";
import { upgradeLayout1 } from "./migrations/002-layout2.js";
import { addBranchKids } from "./migrations/007-branch-kids.js";
import { pagesUpgradePending, upgradeToPages, type PagesUpgradeOptions } from "./migrations/006-pages.js";

/** One migration file: `NNN_name.sql`. */
export interface Migration {
  id: number;
  name: string;
  sql: string;
}

let cached: Migration[] | undefined;

/** The known migrations, in order. */
export function migrations(): Migration[] {
  if (cached !== undefined) return cached;
  const dir = packageFile(import.meta.url, "migrations", "the migrations folder");
  cached = readdirSync(dir)
    .filter((f) => /^\d+_.*\.sql$/.test(f))
    .sort()
    .map((f) => ({ id: Number.parseInt(f, 10), name: f, sql: readFileSync(join(dir, f), "utf8") }));
  return cached;
}

/** The highest migration applied to `db`, 0 for a database without the migrations table. */
export function appliedVersion(db: Database.Database): number {
  const t = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
  if (t === undefined) return 0;
  const row = db.prepare("SELECT max(id) AS id FROM schema_migrations").get() as { id: number | null };
  return row.id ?? 0;
}

/** The newest schema this library knows. */
export function latestSchema(): number {
  const known = migrations();
  return known.length > 0 ? known[known.length - 1]!.id : 0;
}

/**
 * Throws `NOT_A_STORE` for a database that has tables but is not an iavlite store, and `SCHEMA_TOO_NEW` for a store
 * written by a newer schema. Meant for a read-only connection, before anything opens the file for writing.
 */
export function checkSchema(db: Database.Database, where: string, readOnly = false): void {
  // Litestream adds its own tables (_litestream_seq, _litestream_lock) to every database it replicates, possibly
  // before the store's first migration ran.
  const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[]).filter((t) => !t.startsWith("_litestream_"));
  if (tables.length > 0 && !tables.includes("schema_migrations")) {
    throw new IavlError("NOT_A_STORE", `${where} is a SQLite database but not an iavlite store`);
  }
  const applied = appliedVersion(db);
  const latest = latestSchema();
  if (applied > latest) {
    throw new IavlError(
      "SCHEMA_TOO_NEW",
      `${where} was written by a newer iavlite (schema ${applied}; this version knows up to ${latest}); it was not touched`,
    );
  }
  if (readOnly && applied > 0 && applied < latest) {
    throw new IavlError(
      "SCHEMA_TOO_OLD",
      `${where} was written by an older iavlite (schema ${applied}); open it once with a writer (Tree.open, or any iavlite command that writes) to upgrade it to schema ${latest}`,
    );
  }
  if (readOnly && applied >= PAGES_MIGRATION && pagesUpgradePending(db)) {
    throw new IavlError(
      "SCHEMA_TOO_OLD",
      `${where} is being upgraded to pages (migration ${PAGES_MIGRATION}) by a writer's open, or one that stopped before it finished; open it with a writer (Tree.open, or any iavlite command that writes) to finish`,
    );
  }
}

/**
 * Conversions of existing rows that a migration's SQL alone cannot do, run in its transaction after the SQL. Each is a
 * module of src/sqlite/migrations/ named after its SQL file, frozen as the SQL is (it imports no live store code).
 */
const UPGRADES: Record<number, (db: Database.Database) => void> = { 2: upgradeLayout1, 7: addBranchKids };

/** The migration whose conversion (to pages) is too large for one transaction: it goes on over as many as it needs. */
const PAGES_MIGRATION = 6;

/**
 * Applies every migration newer than the store's, each in its own transaction (after {@link checkSchema}), then
 * finishes the conversion to pages of a store migration 6 marked, from where an earlier open left it.
 */
export function migrate(db: Database.Database, where: string, pages?: PagesUpgradeOptions): void {
  checkSchema(db, where);
  if (appliedVersion(db) < latestSchema()) applyMigrations(db);
  if (pagesUpgradePending(db)) upgradeToPages(db, pages);
}

function applyMigrations(db: Database.Database): void {
  const known = migrations();
  const applied = appliedVersion(db);
  db.exec("CREATE TABLE IF NOT EXISTS schema_migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)");
  const record = db.prepare("INSERT INTO schema_migrations (id, name, applied_at) VALUES (?, ?, ?)");
  for (const m of known) {
    if (m.id <= applied) continue;
    db.transaction(() => {
      db.exec(m.sql);
      UPGRADES[m.id]?.(db);
      record.run(m.id, m.name, new Date().toISOString());
    }).immediate();
  }
}
