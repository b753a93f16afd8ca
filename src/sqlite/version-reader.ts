/**
 * Reads of the versions table and what tells a version's fate: its commit row, the kept range, pruned or never
 * committed, rolled back since a read began, where a replay to it starts, and its logged operations.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { sql, type Connection, type Statement } from "./connection.js";
import { metaNumber, rollbackCount, rolledBackSince } from "./meta.js";
import { blob, toVersionRow, VERSION_COLUMNS, type VersionRow } from "./rows.js";
import { unpackOps, type PackedOp } from "./version-ops.js";

type Row = unknown[];

/** Where replays of a version start: a checkpoint's version and root node key. */
export interface ReplayBase {
  version: number;
  rootVersion: number | null;
  rootSeq: number | null;
}

/** Whether a version a reader began on is still the one it read: kept, pruned since, or replaced by a rollback. */
export type VersionState = "kept" | "pruned" | "rolled-back";

/** The operations of a version, and the id of the first leaves row they made. */
export interface VersionOps {
  firstLeaf: number;
  ops: PackedOp[];
}

/** Reads of version rows. */
export class VersionReader {
  private readonly versionStmt: Statement;
  private readonly stateStmt: Statement;

  constructor(private readonly db: Connection) {
    this.versionStmt = db.prepare(`SELECT ${VERSION_COLUMNS} FROM versions WHERE version = ?`).raw();
    this.stateStmt = db.prepare("SELECT (SELECT 1 FROM versions WHERE version = ?), (SELECT value FROM meta WHERE name = 'rollbacks')").raw();
  }

  /** The commit row of `version`. */
  row(version: number): VersionRow | undefined {
    const r = this.versionStmt.get(version) as Row | undefined;
    return r === undefined ? undefined : toVersionRow(r);
  }

  /** The newest committed version row. */
  latest(): VersionRow | undefined {
    const r = sql(this.db, `SELECT ${VERSION_COLUMNS} FROM versions ORDER BY version DESC LIMIT 1`).raw().get() as Row | undefined;
    return r === undefined ? undefined : toVersionRow(r);
  }

  /** Committed versions, oldest first. */
  list(): number[] {
    return sql(this.db, "SELECT version FROM versions ORDER BY version").pluck().all() as number[];
  }

  /** The oldest committed version still kept. */
  earliest(): number | undefined {
    return (sql(this.db, "SELECT min(version) FROM versions").pluck().get() as number | null) ?? undefined;
  }

  /**
   * The first version of the unbroken run of kept versions that ends at the latest (undefined: none kept): every
   * version's changes from it on are in the leaves rows. A prune keeps every version after the point it pruned to,
   * and below it only snapshots, whose changes are gone with the versions around them; so one seek, not a scan.
   */
  unbrokenFrom(): number | undefined {
    const q = "SELECT min(version) FROM versions WHERE version > coalesce((SELECT value FROM meta WHERE name = 'pruned_to'), 0)";
    return (sql(this.db, q).pluck().get() as number | null) ?? undefined;
  }

  /** Versions up to which leaves rows may have been pruned (an import counts as a prune up to its version). */
  leavesPrunedTo(): number | undefined {
    return metaNumber(this.db, "leaves_pruned_to");
  }

  /** The first version this store ever committed (or imported). */
  first(): number {
    return metaNumber(this.db, "first_version") ?? 1;
  }

  /**
   * The error for a version this store does not hold: `VERSION_PRUNED` when pruning removed it, otherwise
   * `VERSION_NOT_FOUND`. The one place that tells the two apart.
   */
  missing(version: number, latest = this.latest()?.version ?? 0): IavlError {
    const prunedTo = metaNumber(this.db, "pruned_to");
    if (prunedTo !== undefined && version <= prunedTo && version >= this.first()) {
      return new IavlError("VERSION_PRUNED", `version ${version} has been pruned (the oldest kept is ${this.earliest() ?? "none"})`);
    }
    const why = version > latest ? `the latest is ${latest}` : `the store began at version ${this.first()}`;
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
  state(version: number, since: number): VersionState {
    const [present, rollbacks] = this.stateStmt.get(version) as [number | null, number | null];
    return this.stateOf(version, since, present, rollbacks);
  }

  /** {@link state} from what a statement read of it: the version's row (1 when present) and the rollbacks recorded. */
  stateOf(version: number, since: number, present: number | null, rollbacks: number | null): VersionState {
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
    return startOf(version, this.checkpointAtOrBefore(version), this.recordedBase());
  }

  /**
   * The version of {@link replayBase} (0: none), by the same rule, in one statement: a kept tree is checked against
   * it at each read.
   */
  replayBaseVersion(version: number): number {
    const [cp, recorded] = sql(
      this.db,
      "SELECT (SELECT version FROM versions WHERE checkpoint = 1 AND version <= ? ORDER BY version DESC LIMIT 1), (SELECT value FROM meta WHERE name = 'base_version')",
    )
      .raw()
      .get(version) as [number | null, number | string | null];
    return startOf(version, cp === null ? undefined : { version: cp }, recorded === null ? undefined : { version: Number(recorded) })?.version ?? 0;
  }

  /** The operations of `version` in order, or undefined when they are no longer kept. */
  ops(version: number): VersionOps | undefined {
    const r = sql(this.db, "SELECT first_leaf, ops FROM version_ops WHERE version = ?").raw().get(version) as Row | undefined;
    return r === undefined ? undefined : { firstLeaf: r[0] as number, ops: unpackOps(blob(r[1]), version) };
  }
}

/**
 * Where a replay to `version` starts, of the newest checkpoint at or before it (`cp`) and the base a prune recorded:
 * the checkpoint, unless the prune removed it and recorded a newer base at or before `version`. (A snapshot kept by
 * pruning may be older than the recorded base; the log before the base may be gone.)
 */
function startOf<T extends { version: number }>(version: number, cp: T | undefined, base: T | undefined): T | undefined {
  return base === undefined || base.version > version || (cp !== undefined && cp.version >= base.version) ? cp : base;
}
