/**
 * Rows of the store: what one version writes, and the lookups the tree and the readers make.
 * @module
 */
import type Database from "better-sqlite3";
import { IavlError } from "../errors.js";
import { compactedTables, createShard, LEAF_BASE, shardOf, shardTables } from "./shards.js";

/** A committed version (the commit marker). */
export interface VersionRow {
  version: number;
  hash: Uint8Array;
  size: number;
  checkpoint: boolean;
  rootVersion: number | null;
  rootSeq: number | null;
  ops: number;
}

/** What a log row records about one operation of a version. */
export const enum OpKind {
  Delete = 0,
  /** A set whose leaf is in the committed tree; the row carries the leaf hash. */
  Leaf = 1,
  /** A set replaced or removed later in the same version: needed to replay the tree's shape exactly. */
  Transient = 2,
}

/** One operation of a version, in order: `seq` = LEAF_BASE + its index. */
export interface LogRow {
  seq: number;
  key: Uint8Array;
  kind: OpKind;
  hash: Uint8Array | null;
}

/** A stored branch node. */
export interface BranchRow {
  version: number;
  seq: number;
  key: Uint8Array;
  height: number;
  size: number;
  hash: Uint8Array;
  leftVersion: number;
  leftSeq: number;
  rightVersion: number;
  rightSeq: number;
}

/** What one version writes, in one transaction. */
export interface VersionWrite {
  version: VersionRow;
  log: LogRow[];
  kv: Array<{ key: Uint8Array; value: Uint8Array | null }>;
  branches: BranchRow[];
}

/** Rows of an import batch. */
export interface ImportBatch {
  leaves: Array<{ version: number; seq: number; key: Uint8Array; value: Uint8Array; hash: Uint8Array }>;
  branches: BranchRow[];
}

type Row = unknown[];

/** A plain Uint8Array over a Buffer's bytes (no copy): the API promises Uint8Array, and tests compare types. */
export function bytes(b: unknown): Uint8Array {
  const u = b as Uint8Array;
  return new Uint8Array(u.buffer, u.byteOffset, u.byteLength);
}

/** Reads of a store file; shared by the writer and by read-only handles. */
export class StoreReader {
  readonly shardSize: number;
  private readonly stmts = new Map<string, Database.Statement>();
  private readonly valueAtStmt: Database.Statement;
  private readonly versionStmt: Database.Statement;

  /** Versions up to `through` have their node rows in the compacted tables of generation `gen`. */
  protected layout = { gen: 0, through: -1 };

  constructor(readonly db: Database.Database) {
    this.shardSize = Number(this.meta("shard_size") ?? 1000);
    this.reloadLayout();
    this.valueAtStmt = db.prepare("SELECT value FROM kv WHERE key = ? AND version <= ? ORDER BY version DESC LIMIT 1").raw();
    this.versionStmt = db.prepare("SELECT version, hash, size, checkpoint, root_version, root_seq, ops FROM versions WHERE version = ?").raw();
  }

  /** A setting from the meta table. */
  meta(name: string): unknown {
    const r = this.db.prepare("SELECT value FROM meta WHERE name = ?").pluck().get(name);
    return r ?? undefined;
  }

  /** The value of `key` at `version`: the bytes, null when removed, undefined when never set up to then. */
  valueAt(key: Uint8Array, version: number): Uint8Array | null | undefined {
    const r = this.valueAtStmt.get(key, version) as Row | undefined;
    return r === undefined ? undefined : r[0] === null ? null : bytes(r[0]);
  }

  /** The commit row of `version`. */
  version(version: number): VersionRow | undefined {
    const r = this.versionStmt.get(version) as Row | undefined;
    return r === undefined ? undefined : toVersionRow(r);
  }

  /** The newest committed version row. */
  latest(): VersionRow | undefined {
    const r = this.db.prepare("SELECT version, hash, size, checkpoint, root_version, root_seq, ops FROM versions ORDER BY version DESC LIMIT 1").raw().get() as Row | undefined;
    return r === undefined ? undefined : toVersionRow(r);
  }

  /** The newest checkpoint at or before `version`. */
  checkpointAtOrBefore(version: number): VersionRow | undefined {
    const r = this.db
      .prepare("SELECT version, hash, size, checkpoint, root_version, root_seq, ops FROM versions WHERE checkpoint = 1 AND version <= ? ORDER BY version DESC LIMIT 1")
      .raw()
      .get(version) as Row | undefined;
    return r === undefined ? undefined : toVersionRow(r);
  }

  /**
   * Where a replay to `version` starts: the newest checkpoint at or before it, or, once pruning removed that
   * checkpoint's own row, the base the prune recorded. Undefined: replay from the first version.
   */
  replayBase(version: number): { version: number; rootVersion: number | null; rootSeq: number | null } | undefined {
    const cp = this.checkpointAtOrBefore(version);
    const base = this.meta("base_version");
    // A snapshot kept by pruning may be older than the recorded base; the log before the base may be gone.
    if (base === undefined || base === null || Number(base) > version || (cp !== undefined && cp.version >= Number(base))) return cp;
    return {
      version: Number(base),
      rootVersion: (this.meta("base_root_version") as number | null) ?? null,
      rootSeq: (this.meta("base_root_seq") as number | null) ?? null,
    };
  }

  /** True when `version` was committed once and pruning removed it. */
  wasPruned(version: number): boolean {
    const to = this.meta("pruned_to");
    return to !== undefined && to !== null && version <= Number(to) && version >= this.firstVersion() && this.version(version) === undefined;
  }

  /** The first version this store ever committed (or imported). */
  firstVersion(): number {
    return Number(this.meta("first_version") ?? 1);
  }

  /** Committed versions, oldest first. */
  versions(): number[] {
    return this.db.prepare("SELECT version FROM versions ORDER BY version").pluck().all() as number[];
  }

  /** The oldest committed version still kept. */
  earliest(): number | undefined {
    return (this.db.prepare("SELECT min(version) FROM versions").pluck().get() as number | null) ?? undefined;
  }

  /** A stored branch. */
  branch(version: number, seq: number): BranchRow | undefined {
    const r = this.lookup(version, "branch", (t) => `SELECT key, height, size, hash, left_version, left_seq, right_version, right_seq FROM ${t} WHERE version = ? AND seq = ?`, (s) => s.get(version, seq) as Row | undefined);
    if (r === undefined) return undefined;
    return {
      version,
      seq,
      key: bytes(r[0]),
      height: r[1] as number,
      size: r[2] as number,
      hash: r[3] as Uint8Array,
      leftVersion: r[4] as number,
      leftSeq: r[5] as number,
      rightVersion: r[6] as number,
      rightSeq: r[7] as number,
    };
  }

  /** A stored leaf: its key and hash. */
  leaf(version: number, seq: number): { key: Uint8Array; hash: Uint8Array } | undefined {
    const r = this.lookup(version, "log", (t) => `SELECT key, hash FROM ${t} WHERE version = ? AND seq = ?`, (s) => s.get(version, seq) as Row | undefined);
    if (r === undefined || r[1] === null) return undefined;
    return { key: bytes(r[0]), hash: r[1] as Uint8Array };
  }

  /** The log of `version`, in operation order. */
  log(version: number): LogRow[] {
    const rows = this.lookup(version, "log", (t) => `SELECT seq, key, kind, hash FROM ${t} WHERE version = ? ORDER BY seq`, (s) => {
      const all = s.all(version) as Row[];
      return all.length > 0 ? all : undefined;
    });
    return (rows ?? []).map((r) => ({ seq: r[0] as number, key: bytes(r[1]), kind: r[2] as OpKind, hash: r[3] as Uint8Array | null }));
  }

  /**
   * `[key, value]` pairs as of `version`, in key order: for each key the newest row at or before `version`.
   * Rows come in pages of bounded size, each its own statement, so that no read snapshot stays open between pages.
   */
  *range(
    version: number,
    start: Uint8Array | undefined,
    end: Uint8Array | undefined,
    reverse: boolean,
    read: <T>(fn: () => T) => T = (fn) => fn(),
  ): Generator<[key: Uint8Array, value: Uint8Array, rowVersion: number]> {
    // Export reads whole trees this way, so its pages are larger.
    const page = start === undefined && end === undefined ? 2048 : 256;
    let lower = start;
    let upper = end;
    let first = true;
    for (;;) {
      // SQLite takes the bare `value` from the row holding max(version) of each group.
      const where = ["version <= @version"];
      if (lower !== undefined) where.push(!reverse && !first ? "key > @lower" : "key >= @lower");
      if (upper !== undefined) where.push("key < @upper");
      const sql = `SELECT key, value, max(version) FROM kv WHERE ${where.join(" AND ")} GROUP BY key ORDER BY key ${reverse ? "DESC" : "ASC"} LIMIT ${page}`;
      const params: Record<string, unknown> = { version };
      if (lower !== undefined) params["lower"] = lower;
      if (upper !== undefined) params["upper"] = upper;
      const rows = read(() => this.cached(sql).raw().all(params) as Row[]);
      for (const r of rows) if (r[1] !== null) yield [bytes(r[0]), bytes(r[1]), r[2] as number];
      if (rows.length < page) return;
      const last = rows[rows.length - 1]![0] as Uint8Array;
      if (reverse) upper = last;
      else lower = last;
      first = false;
    }
  }

  /** A cached statement. */
  cached(sql: string): Database.Statement {
    let s = this.stmts.get(sql);
    if (s === undefined) {
      s = this.db.prepare(sql);
      this.stmts.set(sql, s);
    }
    return s;
  }

  /** Where the node rows of `version` are: a shard, or the compacted tables once pruning moved them. */
  private tableFor(version: number, table: "log" | "branch"): string {
    if (version <= this.layout.through) return compactedTables(this.layout.gen)[table];
    return shardTables(shardOf(version, this.shardSize))[table];
  }

  /**
   * Runs a node lookup against the right table. When the row or table is missing, the layout may have changed under
   * us (a prune moved rows and dropped tables): reload it and try once more.
   */
  private lookup<T>(version: number, table: "log" | "branch", sql: (table: string) => string, run: (s: Database.Statement) => T | undefined): T | undefined {
    for (let attempt = 0; ; attempt++) {
      const name = this.tableFor(version, table);
      try {
        const r = run(this.cached(sql(name)).raw());
        if (r !== undefined || attempt > 0) return r;
      } catch (e) {
        if (!/no such table/.test((e as Error).message) || attempt > 0) throw e;
      }
      if (!this.reloadLayout()) return undefined;
    }
  }

  /** Rereads where pruned rows live; true when it changed (cached statements are then dropped). */
  reloadLayout(): boolean {
    const gen = Number(this.meta("compact_gen") ?? 0);
    const through = Number(this.meta("compact_through") ?? -1);
    if (gen === this.layout.gen && through === this.layout.through) return false;
    this.layout = { gen, through };
    this.stmts.clear();
    return true;
  }
}

function toVersionRow(r: Row): VersionRow {
  return {
    version: r[0] as number,
    hash: r[1] as Uint8Array,
    size: r[2] as number,
    checkpoint: r[3] === 1,
    rootVersion: r[4] as number | null,
    rootSeq: r[5] as number | null,
    ops: r[6] as number,
  };
}

/** The writer's side: one transaction per version. */
export class StoreWriter extends StoreReader {
  private readonly shardsMade = new Set<number>();
  private readonly kvInsert: Database.Statement;
  private readonly versionInsert: Database.Statement;

  constructor(db: Database.Database) {
    super(db);
    for (const id of db.prepare("SELECT id FROM shards").pluck().all() as number[]) this.shardsMade.add(id);
    this.kvInsert = db.prepare("INSERT OR REPLACE INTO kv (key, version, value) VALUES (?, ?, ?)");
    this.versionInsert = db.prepare("INSERT INTO versions (version, hash, size, checkpoint, root_version, root_seq, ops) VALUES (?, ?, ?, ?, ?, ?, ?)");
  }

  /** Sets a meta value. */
  setMeta(name: string, value: string | number): void {
    this.db.prepare("INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)").run(name, value);
  }

  /** Writes one version atomically: its log, values, branches (at a checkpoint) and, last, its commit row. */
  writeVersion(w: VersionWrite): void {
    const v = w.version.version;
    this.db
      .transaction(() => {
        if (this.latestVersionNumber() >= v) throw new IavlError("CORRUPT", `version ${v} is already stored`);
        const logIns = this.insertStmt(v, "log", (t) => `INSERT INTO ${t} (version, seq, key, kind, hash) VALUES (?, ?, ?, ?, ?)`);
        for (const r of w.log) logIns.run(v, r.seq, r.key, r.kind, r.hash);
        for (const r of w.kv) this.kvInsert.run(r.key, v, r.value);
        for (const b of w.branches) {
          const ins = this.insertStmt(b.version, "branch", (t) => `INSERT INTO ${t} (version, seq, key, height, size, hash, left_version, left_seq, right_version, right_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
          ins.run(b.version, b.seq, b.key, b.height, b.size, b.hash, b.leftVersion, b.leftSeq, b.rightVersion, b.rightSeq);
        }
        const r = w.version;
        this.cached("INSERT OR IGNORE INTO meta (name, value) VALUES ('first_version', ?)").run(v);
        this.versionInsert.run(v, r.hash, r.size, r.checkpoint ? 1 : 0, r.rootVersion, r.rootSeq, r.ops);
      })
      .immediate();
  }

  /**
   * Writes rows of an import in one transaction: leaves (log rows and their values) and branches of any versions.
   * The import's commit row comes last, through {@link StoreWriter.writeCommitRow}.
   */
  writeImportBatch(b: ImportBatch): void {
    this.db
      .transaction(() => {
        for (const l of b.leaves) {
          const ins = this.insertStmt(l.version, "log", (t) => `INSERT INTO ${t} (version, seq, key, kind, hash) VALUES (?, ?, ?, ${OpKind.Leaf}, ?)`);
          ins.run(l.version, l.seq, l.key, l.hash);
          this.kvInsert.run(l.key, l.version, l.value);
        }
        for (const r of b.branches) {
          const ins = this.insertStmt(r.version, "branch", (t) => `INSERT INTO ${t} (version, seq, key, height, size, hash, left_version, left_seq, right_version, right_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
          ins.run(r.version, r.seq, r.key, r.height, r.size, r.hash, r.leftVersion, r.leftSeq, r.rightVersion, r.rightSeq);
        }
      })
      .immediate();
  }

  /** Writes the commit row of a version whose nodes are already stored (the end of an import). */
  writeCommitRow(r: VersionRow): void {
    this.db
      .transaction(() => {
        this.cached("INSERT OR IGNORE INTO meta (name, value) VALUES ('first_version', ?)").run(r.version);
        this.versionInsert.run(r.version, r.hash, r.size, r.checkpoint ? 1 : 0, r.rootVersion, r.rootSeq, r.ops);
      })
      .immediate();
  }

  private latestVersionNumber(): number {
    return (this.cached("SELECT max(version) FROM versions").pluck().get() as number | null) ?? 0;
  }

  private insertStmt(version: number, table: "log" | "branch", sql: (table: string) => string): Database.Statement {
    const id = shardOf(version, this.shardSize);
    if (!this.shardsMade.has(id)) {
      createShard(this.db, id, this.shardSize);
      this.shardsMade.add(id);
    }
    return this.cached(sql(shardTables(id)[table]));
  }
}

export { LEAF_BASE };
