/**
 * The writer's side of a store file: one transaction per version (or one for a group of versions), and the rows of an
 * import.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { sql, type Connection } from "./connection.js";
import { initMeta, setMeta } from "./meta.js";
import { VERSION_COLUMNS, type BranchRow, type CheckpointMark, type ImportBatch, type LeafWrite, type PageWrite, type VersionRow, type VersionRows } from "./rows.js";
import { compactedTable, createBranchTable, createShard, insertBranch, shardOf, shardTable } from "./shards.js";
import { StoreReader } from "./store-reader.js";
import { insertOrphans } from "./orphaned-branches.js";
import { insertPage } from "./page-rows.js";
import { retryBusy, writeTransaction } from "./write-errors.js";
import { rowSum } from "./row-sum.js";
import { dropUnfinishedCheckpoint, unfinishedCheckpoint } from "./unfinished-checkpoints.js";

/** The compacted generation an import writes every branch into, whatever version range the nodes span. */
const IMPORT_GEN = 1;

/** Writes a leaves row of `version`. */
export function insertLeaf(db: Connection, version: number, l: LeafWrite): void {
  const sum = l.value === null ? null : rowSum(l.key, version, l.value);
  sql(db, "INSERT INTO leaves (id, version, key, hash, value, sum) VALUES (?, ?, ?, ?, ?, ?)").run(l.id, version, l.key, l.hash, l.value, sum);
}

/** Writes the packed operations of `version`. */
export function insertOps(db: Connection, version: number, firstLeaf: number, ops: Uint8Array): void {
  sql(db, "INSERT INTO version_ops (version, first_leaf, ops) VALUES (?, ?, ?)").run(version, firstLeaf, ops);
}

/** Writes of a store file, with the readers of the same connection beside it. */
export class StoreWriter {
  readonly read: StoreReader;
  private readonly shardsMade = new Set<number>();
  /** Shards made by the transaction (or group) not yet committed: a rollback unmakes them. */
  private readonly shardsPending: number[] = [];

  constructor(readonly db: Connection) {
    this.read = new StoreReader(db);
    for (const id of sql(db, "SELECT id FROM shards").pluck().all() as number[]) this.shardsMade.add(id);
  }

  /** Before the first commit of a writer: the replay base, if a crash left rows of a checkpoint past it. */
  unfinishedCheckpoint(): number | undefined {
    return unfinishedCheckpoint(this.db);
  }

  /** Removes those rows, and records what the versions replayed from `base` replaced (`[version, seq, …]` each). */
  dropUnfinishedCheckpoint(base: number, replaced: ReadonlyMap<number, readonly number[]>): void {
    dropUnfinishedCheckpoint(this.db, base, replaced);
  }

  /** Records the shard size of a new store (a store keeps the one it was created with). */
  static init(db: Connection, shardSize: number): void {
    initMeta(db, "shard_size", shardSize);
  }

  /**
   * Opens a group: the versions written until {@link endGroup} go into one transaction, each in a savepoint of it, so
   * that a page several of them change reaches the WAL once. Until then none of them is durable, nor seen by another
   * connection.
   */
  beginGroup(): void {
    retryBusy(this.db, "beginning a group of versions", () => this.db.exec("BEGIN IMMEDIATE"));
  }

  /** Ends the group {@link beginGroup} opened: its versions land together (`land`), or none of them does. */
  endGroup(land: boolean): void {
    if (!this.db.inTransaction) {
      // SQLite rolls a transaction back by itself after some failures (a full disk, an I/O error).
      this.unmake(0);
      if (land) throw new IavlError("IO_ERROR", "a group of versions was lost before it landed: SQLite rolled its transaction back");
      return;
    }
    if (!land) {
      this.db.exec("ROLLBACK");
      this.unmake(0);
      return;
    }
    try {
      retryBusy(this.db, "landing a group of versions", () => this.db.exec("COMMIT"));
    } catch (e) {
      if (this.db.inTransaction) this.db.exec("ROLLBACK");
      this.unmake(0);
      throw e;
    }
    this.shardsPending.length = 0;
  }

  /** Writes one version atomically: its leaves rows, its operations, branches (at a checkpoint) and, last, its commit row. */
  writeVersion(w: VersionRows): void {
    const v = w.version.version;
    this.writing(`committing version ${v}`, () => {
      const latest = (sql(this.db, "SELECT max(version) FROM versions").pluck().get() as number | null) ?? 0;
      if (latest >= v) throw new IavlError("CORRUPT", `version ${v} is already stored`);
      for (const l of w.leaves) insertLeaf(this.db, v, l);
      insertOps(this.db, v, w.firstLeaf, w.ops);
      insertOrphans(this.db, v, w.orphans);
      this.checkpointRows(w.branches, w.pages, w.laterOrphans, w.completes);
      this.commitRow(w.version);
    });
  }

  /**
   * Writes the last rows of a checkpoint of a stored version by themselves, in one transaction, making the version a
   * checkpoint (what a commit carrying a checkpoint's last step writes, minus the commit's own rows).
   */
  writeCheckpoint(branches: Iterable<BranchRow>, pages: Iterable<PageWrite>, orphans: Array<[number, Uint8Array]>, mark: CheckpointMark): void {
    this.writing(`checkpointing version ${mark.version}`, () => this.checkpointRows(branches, pages, orphans, mark));
  }

  /**
   * A checkpoint's rows (all of them, or a step's), the orphans it adds to earlier versions, and the mark of the
   * version it makes a checkpoint, when it ends one.
   */
  private checkpointRows(branches: Iterable<BranchRow>, pages: Iterable<PageWrite>, orphans: Array<[number, Uint8Array]>, mark: CheckpointMark | undefined): void {
    for (const b of branches) insertBranch(this.db, this.shard(b.version), b);
    for (const g of pages) insertPage(this.db, g);
    for (const [version, nodes] of orphans) insertOrphans(this.db, version, nodes);
    if (mark === undefined) return;
    const set = "UPDATE versions SET checkpoint = 1, root_version = ?, root_seq = ? WHERE version = ? AND checkpoint = 0";
    if (sql(this.db, set).run(mark.rootVersion, mark.rootSeq, mark.version).changes !== 1) {
      throw new IavlError("CORRUPT", `version ${mark.version} is not a stored version without a checkpoint`);
    }
  }

  /**
   * Writes rows of an import in one transaction: leaves (with their values), pages, and the spine's branches of any
   * versions, the branches all into one compacted generation, so that a snapshot spanning thousands of versions makes
   * one table, not one per shard. The import's commit row comes last, through {@link StoreWriter.writeImportCommit}.
   */
  writeImportBatch(b: ImportBatch): void {
    const table = compactedTable(IMPORT_GEN);
    writeTransaction(this.db, "importing", () => {
      createBranchTable(this.db, table);
      for (const l of b.leaves) insertLeaf(this.db, l.version, l);
      for (const r of b.branches) insertBranch(this.db, table, r);
      for (const g of b.pages) insertPage(this.db, g);
    });
  }

  /** Commits an import: its branches become the compacted rows of every version up to its own, and its row is written. */
  writeImportCommit(r: VersionRow): void {
    writeTransaction(this.db, "importing", () => {
      createBranchTable(this.db, compactedTable(IMPORT_GEN));
      setMeta(this.db, "compact_gen", IMPORT_GEN);
      setMeta(this.db, "compact_through", r.version);
      // Nothing before the imported version is replayed or pruned: its tree is whole in the rows just written.
      setMeta(this.db, "leaves_pruned_to", r.version);
      this.commitRow(r);
    });
    this.read.branches.reloadLayout();
  }

  private commitRow(r: VersionRow): void {
    initMeta(this.db, "first_version", r.version);
    sql(this.db, `INSERT INTO versions (${VERSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(
      r.version,
      r.hash,
      r.size,
      r.checkpoint ? 1 : 0,
      r.rootVersion,
      r.rootSeq,
      r.ops,
      r.firstLeaf,
      r.leafRows,
    );
  }

  /** Runs `fn` in a write transaction (a savepoint inside a group), forgetting the shards it made if it fails. */
  private writing(doing: string, fn: () => void): void {
    const from = this.shardsPending.length;
    try {
      writeTransaction(this.db, doing, fn);
    } catch (e) {
      this.unmake(from);
      throw e;
    }
    if (!this.db.inTransaction) this.shardsPending.length = 0;
  }

  /** Forgets the shards made since the `from`th pending one: their tables were rolled back with what made them. */
  private unmake(from: number): void {
    for (const id of this.shardsPending.splice(from)) this.shardsMade.delete(id);
  }

  /** The branch table of the shard holding `version`, created on first use. */
  private shard(version: number): string {
    const id = shardOf(version, this.read.branches.shardSize);
    if (!this.shardsMade.has(id)) {
      createShard(this.db, id, this.read.branches.shardSize);
      this.shardsMade.add(id);
      this.shardsPending.push(id);
    }
    return shardTable(id);
  }
}
