/**
 * A plain SQLite key-value table with no tree and no history: the floor `iavlite bench` measures the store against,
 * in the two ways it can be built (SPEC §6–7), so that the faster one is the floor.
 *
 * Plain SQL outside src/sqlite on purpose: it is what the store is compared with, so it must not go through the
 * store's connection settings or statement cache. The layer rule `sqlite-only-in-sqlite` and test/layers.test.ts
 * name this one file as their exception.
 * @module
 */
import Database from "better-sqlite3";

/** How the plain table is built: a rowid table with a unique key, or a WITHOUT ROWID table keyed by the key. */
export type PlainLayout = "rowid" | "without-rowid";

/** A plain key-value table in its own file, with the store's pragmas (WAL, synchronous NORMAL). */
export class PlainKv {
  private readonly put: Database.Statement;
  private readonly lookup: Database.Statement;

  constructor(
    private readonly db: Database.Database,
    readonly layout: PlainLayout,
  ) {
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    db.exec(`CREATE TABLE IF NOT EXISTS kv (key BLOB PRIMARY KEY, value BLOB)${layout === "without-rowid" ? " WITHOUT ROWID" : ""}`);
    this.put = db.prepare("INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value");
    this.lookup = db.prepare("SELECT value FROM kv WHERE key = ?").pluck();
  }

  /** Creates (or opens) the table in `file`. */
  static open(file: string, layout: PlainLayout): PlainKv {
    return new PlainKv(new Database(file), layout);
  }

  /** Writes `pairs` in one transaction. */
  write(pairs: Iterable<[Uint8Array, Uint8Array]>): void {
    this.db.transaction(() => {
      for (const [k, v] of pairs) this.put.run(k, v);
    })();
  }

  /** The value of `key`, or undefined. */
  get(key: Uint8Array): Uint8Array | undefined {
    return this.lookup.get(key) as Uint8Array | undefined;
  }

  /** Closes the table's file. */
  close(): void {
    this.db.close();
  }
}
