/**
 * The `pages` table (layout 3): page rows by id, their writes, reads and deletes. What a row holds is
 * page-codec.ts's; which node keys name a page is shards.ts's.
 * @module
 */
import { sql, type Connection } from "./connection.js";
import { decodePage, type DecodedPage } from "./page-codec.js";
import { blob, type PageRows, type PageWrite } from "./rows.js";

/** No page rows. */
export const NO_PAGES: PageRows = { count: 0, bytes: 0, *[Symbol.iterator](): Generator<PageWrite> {} };

/** Writes one page row. */
export function insertPage(db: Connection, p: PageWrite): void {
  sql(db, "INSERT INTO pages (id, version, bytes) VALUES (?, ?, ?)").run(p.id, p.version, p.bytes);
}

/** Deletes page `id` (nothing when it is gone already). */
export function deletePage(db: Connection, id: number): void {
  sql(db, "DELETE FROM pages WHERE id = ?").run(id);
}

/** The checkpoint that wrote page `id`, or undefined when it is gone. */
export function pageVersion(db: Connection, id: number): number | undefined {
  return sql(db, "SELECT version FROM pages WHERE id = ?").pluck().get(id) as number | undefined;
}

/** Reads of page rows. */
export class PageReader {
  constructor(private readonly db: Connection) {}

  /** Page `id`, decoded and checked; undefined when there is no such row. */
  one(id: number): DecodedPage | undefined {
    const b = sql(this.db, "SELECT bytes FROM pages WHERE id = ?").pluck().get(id);
    return b === undefined ? undefined : decodePage(blob(b), `page ${id}`);
  }

  /** How many of its page rows the checkpoint of `version` wrote (and pruning left). */
  writtenBy(version: number): number {
    return sql(this.db, "SELECT count(*) FROM pages WHERE version = ?").pluck().get(version) as number;
  }

  /**
   * The id the next page gets: above every id ever given (AUTOINCREMENT's record outlives deleted rows), so that a
   * record of a deleted page never names a newer one.
   */
  nextId(): number {
    const seq = sql(this.db, "SELECT seq FROM sqlite_sequence WHERE name = 'pages'").pluck().get() as number | undefined;
    const max = sql(this.db, "SELECT max(id) FROM pages").pluck().get() as number | null;
    return Math.max(seq ?? 0, max ?? 0) + 1;
  }
}
