/**
 * Reads of a store file, shared by the writer, read-only handles and prune workers: version rows, values by key and
 * version, node rows by node key, and the facts that tell a pruned version from one never committed.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { sql, forgetStatements, type Connection, type Statement } from "./connection.js";
import { metaNumber, rollbackCount, rolledBackSince } from "./meta.js";
import { blob, toVersionRow, VERSION_COLUMNS, type BranchLinks, type BranchRow, type LeafRow, type VersionRow } from "./rows.js";
import { compactedTable, shardOf, shardTable } from "./shards.js";
import { unpackOps, type PackedOp } from "./version-ops.js";

type Row = unknown[];

/** A branch row's columns after its node key, as {@link branchRow} maps them. */
const BRANCH_COLUMNS = "b.key, b.height, b.size, b.hash, b.left_version, b.left_seq, b.right_version, b.right_seq";

/** Where replays of a version start: a checkpoint's version and root node key. */
export interface ReplayBase {
  version: number;
  rootVersion: number | null;
  rootSeq: number | null;
}

/** Whether a version a reader began on is still the one it read: kept, pruned since, or replaced by a rollback. */
export type VersionState = "kept" | "pruned" | "rolled-back";

/** A leaves row as {@link StoreReader.leafPage} gives it. */
export interface LeafPageRow {
  id: number;
  version: number;
  key: Uint8Array;
  hash: Uint8Array | null;
  value: Uint8Array | null;
}

/** The operations of a version, and the id of the first leaves row they made. */
export interface VersionOps {
  firstLeaf: number;
  ops: PackedOp[];
}

/** Reads of a store file. */
export class StoreReader {
  readonly shardSize: number;
  private readonly valueAtStmt: Statement;
  private readonly versionStmt: Statement;
  private readonly stateStmt: Statement;
  private readonly leafStmt: Statement;
  /** Branch lookups by table name. */
  private branchStmts = new Map<string, Statement>();

  /** Versions up to `through` have their node rows in the compacted tables of generation `gen`. */
  private layout = { gen: 0, through: -1 };

  constructor(readonly db: Connection) {
    this.shardSize = metaNumber(db, "shard_size") ?? 1000;
    this.reloadLayout();
    this.valueAtStmt = db.prepare("SELECT value FROM leaves WHERE key = ? AND version <= ? ORDER BY version DESC LIMIT 1").raw();
    this.leafStmt = db.prepare("SELECT version, key, hash FROM leaves WHERE id = ?").raw();
    this.versionStmt = db.prepare(`SELECT ${VERSION_COLUMNS} FROM versions WHERE version = ?`).raw();
    this.stateStmt = db.prepare("SELECT (SELECT 1 FROM versions WHERE version = ?), (SELECT value FROM meta WHERE name = 'rollbacks')").raw();
  }

  /** The value of `key` at `version`: the bytes, null when removed, undefined when never set up to then. */
  valueAt(key: Uint8Array, version: number): Uint8Array | null | undefined {
    const r = this.valueAtStmt.get(key, version) as Row | undefined;
    return r === undefined ? undefined : r[0] === null ? null : blob(r[0]);
  }

  /** The commit row of `version`. */
  version(version: number): VersionRow | undefined {
    const r = this.versionStmt.get(version) as Row | undefined;
    return r === undefined ? undefined : toVersionRow(r);
  }

  /** The newest committed version row. */
  latest(): VersionRow | undefined {
    const r = sql(this.db, `SELECT ${VERSION_COLUMNS} FROM versions ORDER BY version DESC LIMIT 1`).raw().get() as Row | undefined;
    return r === undefined ? undefined : toVersionRow(r);
  }

  /** Committed versions, oldest first. */
  versions(): number[] {
    return sql(this.db, "SELECT version FROM versions ORDER BY version").pluck().all() as number[];
  }

  /** The oldest committed version still kept. */
  earliest(): number | undefined {
    return (sql(this.db, "SELECT min(version) FROM versions").pluck().get() as number | null) ?? undefined;
  }

  /** The first version this store ever committed (or imported). */
  firstVersion(): number {
    return metaNumber(this.db, "first_version") ?? 1;
  }

  /**
   * The error for a version this store does not hold: `VERSION_PRUNED` when pruning removed it, otherwise
   * `VERSION_NOT_FOUND`. The one place that tells the two apart.
   */
  missing(version: number, latest = this.latest()?.version ?? 0): IavlError {
    const prunedTo = metaNumber(this.db, "pruned_to");
    if (prunedTo !== undefined && version <= prunedTo && version >= this.firstVersion()) {
      return new IavlError("VERSION_PRUNED", `version ${version} has been pruned (the oldest kept is ${this.earliest() ?? "none"})`);
    }
    const why = version > latest ? `the latest is ${latest}` : `the store began at version ${this.firstVersion()}`;
    return new IavlError("VERSION_NOT_FOUND", `version ${version} was never committed (${why})`);
  }

  /** Rollbacks recorded so far: a reader notes it when it begins reading a version. */
  rollbacks(): number {
    return rollbackCount(this.db);
  }

  /**
   * Whether `version`, which a reader began reading when {@link rollbacks} was `since`, is still the version it read.
   * Pruning deletes a version row before any data the version reads, and a rollback records itself in the same
   * transaction as its deletions: so "kept" after a read proves the read saw the version whole.
   */
  versionState(version: number, since: number): VersionState {
    const [present, rollbacks] = this.stateStmt.get(version) as [number | null, number | null];
    if ((rollbacks ?? 0) !== since && rolledBackSince(this.db, since, version)) return "rolled-back";
    return present === 1 ? "kept" : "pruned";
  }

  /** The newest checkpoint at or before `version`. */
  private checkpointAtOrBefore(version: number): VersionRow | undefined {
    const r = sql(this.db, `SELECT ${VERSION_COLUMNS} FROM versions WHERE checkpoint = 1 AND version <= ? ORDER BY version DESC LIMIT 1`)
      .raw()
      .get(version) as Row | undefined;
    return r === undefined ? undefined : toVersionRow(r);
  }

  /** The base a prune recorded: the checkpoint replays start from once its own version row was pruned. */
  recordedBase(): ReplayBase | undefined {
    const version = metaNumber(this.db, "base_version");
    if (version === undefined) return undefined;
    return { version, rootVersion: metaNumber(this.db, "base_root_version") ?? null, rootSeq: metaNumber(this.db, "base_root_seq") ?? null };
  }

  /**
   * Where a replay to `version` starts: the newest checkpoint at or before it, or, once pruning removed that
   * checkpoint's own row, the base the prune recorded. Undefined: replay from the first version.
   */
  replayBase(version: number): ReplayBase | undefined {
    const cp = this.checkpointAtOrBefore(version);
    const base = this.recordedBase();
    // A snapshot kept by pruning may be older than the recorded base; the log before the base may be gone.
    if (base === undefined || base.version > version || (cp !== undefined && cp.version >= base.version)) return cp;
    return base;
  }

  /** A stored branch. */
  branch(version: number, seq: number): BranchRow | undefined {
    const r = this.lookup(version, (s) => s.get(version, seq) as Row | undefined);
    return r === undefined ? undefined : branchRow(version, seq, r, 0);
  }

  /**
   * Branches by node key, many at once: each table's share in one query, in storage order. Returns what it found,
   * in no particular order (a missing one is the caller's to notice).
   */
  branches(refs: ReadonlyArray<readonly [version: number, seq: number]>): BranchRow[] {
    return this.batch(refs, BRANCH_COLUMNS, (version, seq, r) => branchRow(version, seq, r, 2));
  }

  /**
   * The links of branches by node key, many at once, as {@link branches} finds them: only the child keys, for a walk
   * of the tree's shape that derives each branch's key and height from its children (an export). Reading no key or
   * hash skips the two buffers a row would cost, most of a row's price.
   */
  branchLinks(refs: ReadonlyArray<readonly [version: number, seq: number]>): BranchLinks[] {
    return this.batch(refs, "b.left_version, b.left_seq, b.right_version, b.right_seq", (version, seq, r) => ({
      version,
      seq,
      leftVersion: r[2] as number,
      leftSeq: r[3] as number,
      rightVersion: r[4] as number,
      rightSeq: r[5] as number,
    }));
  }

  /** Runs {@link branches}' batched lookup for `columns` (after b.version, b.seq), each row mapped by `map`. */
  private batch<T>(refs: ReadonlyArray<readonly [version: number, seq: number]>, columns: string, map: (version: number, seq: number, r: Row) => T): T[] {
    const out: T[] = [];
    let left = refs;
    for (let attempt = 0; left.length > 0 && attempt < 2; attempt++) {
      const byTable = new Map<string, Array<readonly [number, number]>>();
      for (const r of left) {
        const t = this.tableFor(r[0]);
        let a = byTable.get(t);
        if (a === undefined) byTable.set(t, (a = []));
        a.push(r);
      }
      const found = new Set<string>();
      for (const [table, group] of byTable) {
        group.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
        const text = `SELECT b.version, b.seq, ${columns} FROM json_each(?) AS j JOIN ${table} AS b ON b.version = j.value ->> 0 AND b.seq = j.value ->> 1`;
        let rows: Row[];
        try {
          rows = sql(this.db, text).raw().all(JSON.stringify(group)) as Row[];
        } catch (e) {
          if (!/no such table/.test((e as Error).message)) throw e;
          rows = [];
        }
        for (const r of rows) {
          found.add(`${r[0]}/${r[1]}`);
          out.push(map(r[0] as number, r[1] as number, r));
        }
      }
      // Rows a prune moved (and whose table it dropped) meanwhile are found again in the new layout.
      left = left.filter((r) => !found.has(`${r[0]}/${r[1]}`));
      if (left.length > 0 && !this.reloadLayout()) break;
    }
    return out;
  }

  /**
   * A page of a version's leaves rows (ids `first` … `end − 1`, in key order) after row `after`: each key the
   * version set, with its value, or removed (value null).
   */
  changeRows(after: number, end: number, limit: number): Array<{ id: number; key: Uint8Array; value: Uint8Array | null }> {
    const rows = sql(this.db, "SELECT id, key, hash IS NULL, value FROM leaves WHERE id > ? AND id < ? ORDER BY id LIMIT ?").raw().all(after, end, limit) as Row[];
    return rows.map((r) => ({ id: r[0] as number, key: blob(r[1]), value: r[2] === 1 || r[3] === null ? null : blob(r[3]) }));
  }

  /** The stored leaf of `version` in leaves row `id`: its key and hash (undefined for a removal or another version). */
  leaf(version: number, id: number): LeafRow | undefined {
    const r = this.leafStmt.get(id) as Row | undefined;
    if (r === undefined || r[0] !== version || r[2] === null) return undefined;
    return { version, id, key: blob(r[1]), hash: blob(r[2]) };
  }

  /** The hashes of leaves rows `first` … `first + count − 1` (a version's rows), by id; removals have none. */
  leafHashes(first: number, count: number): Map<number, Uint8Array> {
    const out = new Map<number, Uint8Array>();
    if (count === 0) return out;
    for (const r of sql(this.db, "SELECT id, hash FROM leaves WHERE id >= ? AND id < ?").raw().iterate(first, first + count) as Iterable<Row>) {
      if (r[1] !== null) out.set(r[0] as number, blob(r[1]));
    }
    return out;
  }

  /** The operations of `version` in order, or undefined when they are no longer kept. */
  ops(version: number): VersionOps | undefined {
    const r = sql(this.db, "SELECT first_leaf, ops FROM version_ops WHERE version = ?").raw().get(version) as Row | undefined;
    return r === undefined ? undefined : { firstLeaf: r[0] as number, ops: unpackOps(blob(r[1]), version) };
  }

  /** The id the next leaves row gets. */
  nextLeafId(): number {
    return ((sql(this.db, "SELECT max(id) FROM leaves").pluck().get() as number | null) ?? 0) + 1;
  }

  /**
   * `[key, value, rowVersion, rowId]` as of `version`, in key order: for each key the newest row at or before `version`.
   * Rows come in pages of bounded size, each its own statement run through `read` (which may check that the version
   * is still whole), so that no read snapshot stays open between pages.
   */
  *range(
    version: number,
    start: Uint8Array | undefined,
    end: Uint8Array | undefined,
    reverse: boolean,
    read: <T>(fn: () => T) => T = (fn) => fn(),
  ): Generator<[key: Uint8Array, value: Uint8Array, rowVersion: number, rowId: number]> {
    // Whole-tree scans (export, verify) take larger pages.
    const page = start === undefined && end === undefined ? 2048 : 256;
    let lower = start;
    let upper = end;
    let first = true;
    for (;;) {
      // The newest row of each key at or before `version`, found in the (key, version) index alone (its bare id is
      // the max row's), then joined with its value: no other version's value is read.
      const where = ["version <= @version"];
      if (lower !== undefined) where.push(!reverse && !first ? "key > @lower" : "key >= @lower");
      if (upper !== undefined) where.push("key < @upper");
      const dir = reverse ? "DESC" : "ASC";
      const text =
        `SELECT l.key, l.value, l.version, l.id FROM (SELECT id, max(version) FROM leaves WHERE ${where.join(" AND ")} ` +
        `GROUP BY key ORDER BY key ${dir} LIMIT ${page}) AS m JOIN leaves AS l ON l.id = m.id ORDER BY l.key ${dir}`;
      const params: Record<string, unknown> = { version };
      if (lower !== undefined) params["lower"] = lower;
      if (upper !== undefined) params["upper"] = upper;
      const rows = read(() => sql(this.db, text).raw().all(params) as Row[]);
      for (const r of rows) if (r[1] !== null) yield [blob(r[0]), blob(r[1]), r[2] as number, r[3] as number];
      if (rows.length < page) return;
      const last = blob(rows[rows.length - 1]![0]);
      if (reverse) upper = last;
      else lower = last;
      first = false;
    }
  }

  /**
   * One page of the leaves of `version` in key order, after key `after`: the newest row of each key at or before the
   * version. Keys removed by then are left out, so a page may hold fewer than `limit` rows; `next` is the key to go
   * on after, undefined at the end.
   */
  leafPage(version: number, after: Uint8Array | undefined, limit: number): { rows: LeafPageRow[]; next: Uint8Array | undefined } {
    const text =
      `SELECT l.id, l.version, l.key, l.hash, l.value FROM (SELECT id, max(version) FROM leaves WHERE version <= ? ` +
      `${after === undefined ? "" : "AND key > ? "}GROUP BY key ORDER BY key LIMIT ?) AS m JOIN leaves AS l ON l.id = m.id ORDER BY l.key`;
    const args = after === undefined ? [version, limit] : [version, after, limit];
    const all = sql(this.db, text).raw().all(...args) as Row[];
    const rows: LeafPageRow[] = [];
    for (const r of all) {
      if (r[3] === null) continue;
      rows.push({ id: r[0] as number, version: r[1] as number, key: blob(r[2]), hash: blob(r[3]), value: r[4] === null ? null : blob(r[4]) });
    }
    return { rows, next: all.length < limit ? undefined : blob(all[all.length - 1]![2]) };
  }

  /** The branch table holding `version`'s branches: a shard, or the compacted table once pruning (or an import) moved them. */
  protected tableFor(version: number): string {
    if (version <= this.layout.through) return compactedTable(this.layout.gen);
    return shardTable(shardOf(version, this.shardSize));
  }

  /**
   * Runs a branch lookup against the right table. When the row or table is missing, the layout may have changed
   * under us (a prune moved rows and dropped tables): reload it and try once more.
   */
  private lookup<T>(version: number, run: (s: Statement) => T | undefined): T | undefined {
    for (let attempt = 0; ; attempt++) {
      const table = this.tableFor(version);
      try {
        let s = this.branchStmts.get(table);
        if (s === undefined) {
          s = this.db.prepare(`SELECT ${BRANCH_COLUMNS} FROM ${table} AS b WHERE b.version = ? AND b.seq = ?`).raw();
          this.branchStmts.set(table, s);
        }
        const r = run(s);
        if (r !== undefined || attempt > 0) return r;
      } catch (e) {
        if (!/no such table/.test((e as Error).message) || attempt > 0) throw e;
      }
      if (!this.reloadLayout()) return undefined;
    }
  }

  /** Rereads where pruned rows live; true when it changed (statements naming dropped tables are then forgotten). */
  reloadLayout(): boolean {
    const gen = metaNumber(this.db, "compact_gen") ?? 0;
    const through = metaNumber(this.db, "compact_through") ?? -1;
    if (gen === this.layout.gen && through === this.layout.through) return false;
    this.layout = { gen, through };
    this.branchStmts = new Map();
    forgetStatements(this.db);
    return true;
  }
}

/** The branch (`version`, `seq`) from a row whose columns key, height, size, hash and the child keys start at `at`. */
function branchRow(version: number, seq: number, r: Row, at: number): BranchRow {
  return {
    version,
    seq,
    key: blob(r[at]),
    height: r[at + 1] as number,
    size: r[at + 2] as number,
    hash: blob(r[at + 3]),
    leftVersion: r[at + 4] as number,
    leftSeq: r[at + 5] as number,
    rightVersion: r[at + 6] as number,
    rightSeq: r[at + 7] as number,
  };
}
