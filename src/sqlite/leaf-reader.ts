/**
 * Reads of the leaves table: a key's value at a version, a version's changed rows and their hashes, and a version's
 * leaves in key order (newest row of each key at or before it).
 * @module
 */
import { latin1, toHex } from "../base/bytes.js";
import { IavlError } from "../base/errors.js";
import { leafHash, sha256, toDigest } from "../base/hash.js";
import { sql, type Connection, type Statement } from "./connection.js";
import { rowSum } from "./row-sum.js";
import { blob, type LeafRow } from "./rows.js";

type Row = unknown[];

/**
 * The columns a read checks a row with: its leaf hash only when it has no sum (a 32-byte blob costs more to read than
 * the whole check by sum), its value and its sum.
 */
const CHECKS = "CASE WHEN sum IS NULL THEN hash END AS hash, value, sum";

/** A leaves row as {@link LeafReader.page} gives it. */
export interface LeafPageRow {
  id: number;
  version: number;
  key: Uint8Array;
  hash: Uint8Array | null;
  value: Uint8Array | null;
}

/** A key's row at a version: its value, or null where the version removed it. */
export interface KeyRow {
  version: number;
  value: Uint8Array | null;
}

/** Reads of leaves rows. */
export class LeafReader {
  private readonly valueAtStmt: Statement;
  private readonly leafStmt: Statement;
  private readonly valueCheckedStmt: Statement;

  constructor(private readonly db: Connection) {
    this.valueAtStmt = db.prepare(`SELECT version, ${CHECKS} FROM leaves WHERE key = ? AND version <= ? ORDER BY version DESC LIMIT 1`).raw();
    this.leafStmt = db.prepare("SELECT version, key, hash FROM leaves WHERE id = ?").raw();
    this.valueCheckedStmt = db
      .prepare(
        "SELECT l.version, l.hash, l.value, l.sum, (SELECT 1 FROM versions WHERE version = @v), (SELECT value FROM meta WHERE name = 'rollbacks') " +
          `FROM (SELECT 1) LEFT JOIN (SELECT version, ${CHECKS} FROM leaves WHERE key = @k AND version <= @v ORDER BY version DESC LIMIT 1) AS l`,
      )
      .raw();
  }

  /**
   * The value of `key` at `version` (undefined when absent), read with what tells whether the version is still kept
   * ({@link VersionReader.stateOf}'s `present` and `rollbacks`): a historic get in one statement, not two.
   */
  valueChecked(key: Uint8Array, version: number): [value: Uint8Array | undefined, present: number | null, rollbacks: number | null] {
    const r = this.valueCheckedStmt.get({ k: key, v: version }) as [number | null, unknown, unknown, unknown, number | null, number | null];
    return [r[0] === null ? undefined : (this.vouched(key, r[0], r[1], r[2], r[3]) ?? undefined), r[4], r[5]];
  }

  /** The value of `key` at `version`: the bytes, null when removed, undefined when never set up to then. */
  valueAt(key: Uint8Array, version: number): Uint8Array | null | undefined {
    const r = this.valueAtStmt.get(key, version) as Row | undefined;
    return r === undefined ? undefined : this.vouched(key, r[0] as number, r[1], r[2], r[3]);
  }

  /**
   * The rows of `key` at versions `from` … `to`, newest first (oldest first with `oldestFirst`), at most `limit`: one
   * range of the `(key, version)` index.
   */
  history(key: Uint8Array, from: number, to: number, limit: number, oldestFirst: boolean): KeyRow[] {
    const order = oldestFirst ? "ASC" : "DESC";
    const q = `SELECT version, ${CHECKS} FROM leaves WHERE key = ? AND version >= ? AND version <= ? ORDER BY version ${order} LIMIT ?`;
    return (sql(this.db, q).raw().all(key, from, to, limit) as Row[]).map((r) => this.keyRow(key, r));
  }

  /** The newest row of `key` before `version`, if any. */
  before(key: Uint8Array, version: number): KeyRow | undefined {
    const r = sql(this.db, `SELECT version, ${CHECKS} FROM leaves WHERE key = ? AND version < ? ORDER BY version DESC LIMIT 1`).raw().get(key, version);
    return r === undefined ? undefined : this.keyRow(key, r as Row);
  }

  /**
   * A page of a version's leaves rows (ids `first` … `end − 1`, in key order) after row `after`: each key the
   * version set, with its value, or removed (value null).
   */
  changeRows(after: number, end: number, limit: number): Array<{ id: number; key: Uint8Array; value: Uint8Array | null }> {
    const rows = sql(this.db, `SELECT id, key, version, ${CHECKS} FROM leaves WHERE id > ? AND id < ? ORDER BY id LIMIT ?`).raw().all(after, end, limit) as Row[];
    return rows.map((r) => {
      const key = blob(r[1]);
      return { id: r[0] as number, key, value: this.vouched(key, r[2] as number, r[3], r[4], r[5]) };
    });
  }

  /** The stored leaf of `version` in leaves row `id`: its key and hash (undefined for a removal or another version). */
  leaf(version: number, id: number): LeafRow | undefined {
    const r = this.leafStmt.get(id) as Row | undefined;
    if (r === undefined || r[0] !== version || r[2] === null) return undefined;
    return { version, id, key: blob(r[1]), hash: blob(r[2]) };
  }

  /** The hashes of leaves rows `first` … `first + count − 1` (a version's rows), by id; removals have none. */
  hashes(first: number, count: number): Map<number, Uint8Array> {
    const out = new Map<number, Uint8Array>();
    if (count === 0) return out;
    for (const r of sql(this.db, "SELECT id, hash FROM leaves WHERE id >= ? AND id < ?").raw().iterate(first, first + count) as Iterable<Row>) {
      if (r[1] !== null) out.set(r[0] as number, blob(r[1]));
    }
    return out;
  }

  /**
   * The value a leaves row of `key` at `version` holds (null for a removal), once the row's sum (rows written since
   * migration 005) or else its leaf hash says the row is whole: a damaged row, or an index entry that leads to another
   * key's row, is `CORRUPT`, never a wrong value. `hash` may be left unread (null) for a row with a sum.
   */
  private vouched(key: Uint8Array, version: number, hash: unknown, value: unknown, sum: unknown): Uint8Array | null {
    if (sum !== null) {
      const v = value === null ? undefined : blob(value);
      if (v !== undefined && rowSum(key, version, v) === sum) return v;
    } else if (hash === null && value === null) {
      return null;
    } else if (hash !== null && value !== null) {
      const v = blob(value);
      if (leafHash(latin1(key), sha256(v), version) === toDigest(blob(hash))) return v;
    }
    throw new IavlError(
      "CORRUPT",
      `${this.db.name}: the leaves row of key ${toHex(key)} at version ${version} does not match its ${sum === null ? "leaf hash" : "checksum"}; the file is damaged (iavlite verify finds what else is)`,
    );
  }

  private keyRow(key: Uint8Array, r: Row): KeyRow {
    return { version: r[0] as number, value: this.vouched(key, r[0] as number, r[1], r[2], r[3]) };
  }

  /** The id the next leaves row gets. */
  nextId(): number {
    return ((sql(this.db, "SELECT max(id) FROM leaves").pluck().get() as number | null) ?? 0) + 1;
  }

  /**
   * `[key, value, rowVersion, rowId]` as of `version`, in key order: for each key the newest row at or before `version`.
   * Rows come in pages of bounded size, each its own statement run through `read` (which may check that the version
   * is still whole), so that no read snapshot stays open between pages. `checked` as for {@link page}.
   */
  *range(
    version: number,
    start: Uint8Array | undefined,
    end: Uint8Array | undefined,
    reverse: boolean,
    read: <T>(fn: () => T) => T = (fn) => fn(),
    checked = true,
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
        `SELECT l.key, l.value, l.version, l.id, CASE WHEN l.sum IS NULL THEN l.hash END, l.sum FROM (SELECT id, max(version) FROM leaves WHERE ${where.join(" AND ")} ` +
        `GROUP BY key ORDER BY key ${dir} LIMIT ${page}) AS m JOIN leaves AS l ON l.id = m.id ORDER BY l.key ${dir}`;
      const params: Record<string, unknown> = { version };
      if (lower !== undefined) params["lower"] = lower;
      if (upper !== undefined) params["upper"] = upper;
      const rows = read(() => sql(this.db, text).raw().all(params) as Row[]);
      for (const r of rows) {
        const key = blob(r[0]);
        const value = checked ? this.vouched(key, r[2] as number, r[4], r[1], r[5]) : r[1] === null ? null : blob(r[1]);
        if (value !== null) yield [key, value, r[2] as number, r[3] as number];
      }
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
   * on after, undefined at the end. `checked`: values only as their leaf hashes vouch for them (an audit, which
   * rehashes everything itself to report each fault, reads them as stored).
   */
  page(version: number, after: Uint8Array | undefined, limit: number, checked = true): { rows: LeafPageRow[]; next: Uint8Array | undefined } {
    const text =
      `SELECT l.id, l.version, l.key, l.hash, l.value, l.sum FROM (SELECT id, max(version) FROM leaves WHERE version <= ? ` +
      `${after === undefined ? "" : "AND key > ? "}GROUP BY key ORDER BY key LIMIT ?) AS m JOIN leaves AS l ON l.id = m.id ORDER BY l.key`;
    const args = after === undefined ? [version, limit] : [version, after, limit];
    const all = sql(this.db, text).raw().all(...args) as Row[];
    const rows: LeafPageRow[] = [];
    for (const r of all) {
      if (r[3] === null) continue;
      const key = blob(r[2]);
      // A value may be gone from a row only a pruned version reads (the export of such a version is refused).
      rows.push({ id: r[0] as number, version: r[1] as number, key, hash: blob(r[3]), value: r[4] === null ? null : checked ? this.vouched(key, r[1] as number, r[3], r[4], r[5]) : blob(r[4]) });
    }
    return { rows, next: all.length < limit ? undefined : blob(all[all.length - 1]![2]) };
  }
}

