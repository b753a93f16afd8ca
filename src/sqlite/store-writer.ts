/**
 * The writer's side of a store file: one transaction per version, and the rows of an import.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { sql, type Connection } from "./connection.js";
import { initMeta, setMeta } from "./meta.js";
import type { ImportBatch, VersionRow, VersionWrite } from "./rows.js";
import { compactedTables, createNodeTables, createShard, insertBranch, insertLeaf, insertLog, shardOf, shardTables, type NodeTables } from "./shards.js";
import { StoreReader } from "./store-reader.js";
import { writeTransaction } from "./write-errors.js";

/** The compacted generation an import writes every node into, whatever version range the nodes span. */
const IMPORT_GEN = 1;

/** Writes of a store file. */
export class StoreWriter extends StoreReader {
  private readonly shardsMade = new Set<number>();

  constructor(db: Connection) {
    super(db);
    for (const id of sql(db, "SELECT id FROM shards").pluck().all() as number[]) this.shardsMade.add(id);
  }

  /** Records the shard size of a new store (a store keeps the one it was created with). */
  static init(db: Connection, shardSize: number): void {
    initMeta(db, "shard_size", shardSize);
  }

  /** Writes one version atomically: its log, values, branches (at a checkpoint) and, last, its commit row. */
  writeVersion(w: VersionWrite): void {
    const v = w.version.version;
    writeTransaction(this.db, `committing version ${v}`, () => {
      const latest = (sql(this.db, "SELECT max(version) FROM versions").pluck().get() as number | null) ?? 0;
      if (latest >= v) throw new IavlError("CORRUPT", `version ${v} is already stored`);
      const logTables = this.shard(v);
      for (const r of w.log) insertLog(this.db, logTables, v, r);
      const kv = sql(this.db, "INSERT OR REPLACE INTO kv (key, version, value) VALUES (?, ?, ?)");
      for (const r of w.kv) kv.run(r.key, v, r.value);
      for (const b of w.branches) insertBranch(this.db, this.shard(b.version), b);
      this.commitRow(w.version);
    });
  }

  /**
   * Writes rows of an import in one transaction: leaves (with their values) and branches of any versions, all into
   * one compacted generation, so that a snapshot spanning thousands of versions makes two tables, not a pair per
   * shard. The import's commit row comes last, through {@link StoreWriter.writeImportCommit}.
   */
  writeImportBatch(b: ImportBatch): void {
    const t = compactedTables(IMPORT_GEN);
    writeTransaction(this.db, "importing", () => {
      createNodeTables(this.db, t);
      const kv = sql(this.db, "INSERT INTO kv (key, version, value) VALUES (?, ?, ?)");
      for (const l of b.leaves) {
        insertLeaf(this.db, t, l);
        kv.run(l.key, l.version, l.value);
      }
      for (const r of b.branches) insertBranch(this.db, t, r);
    });
  }

  /** Commits an import: its nodes become the compacted rows of every version up to its own, and its row is written. */
  writeImportCommit(r: VersionRow): void {
    writeTransaction(this.db, "importing", () => {
      createNodeTables(this.db, compactedTables(IMPORT_GEN));
      setMeta(this.db, "compact_gen", IMPORT_GEN);
      setMeta(this.db, "compact_through", r.version);
      this.commitRow(r);
    });
    this.reloadLayout();
  }

  private commitRow(r: VersionRow): void {
    initMeta(this.db, "first_version", r.version);
    sql(this.db, "INSERT INTO versions (version, hash, size, checkpoint, root_version, root_seq, ops) VALUES (?, ?, ?, ?, ?, ?, ?)").run(
      r.version,
      r.hash,
      r.size,
      r.checkpoint ? 1 : 0,
      r.rootVersion,
      r.rootSeq,
      r.ops,
    );
  }

  /** The tables of the shard holding `version`, created on first use. */
  private shard(version: number): NodeTables {
    const id = shardOf(version, this.shardSize);
    if (!this.shardsMade.has(id)) {
      createShard(this.db, id, this.shardSize);
      this.shardsMade.add(id);
    }
    return shardTables(id);
  }
}
