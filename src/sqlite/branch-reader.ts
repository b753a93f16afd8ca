/**
 * Reads of branch rows by node key, wherever they live: the shard of their version, or the compacted tables once a
 * prune (or an import) moved them; a lookup that misses because a prune moved rows meanwhile tries the new layout.
 * @module
 */
import { forgetStatements, sql, type Connection, type Statement } from "./connection.js";
import { metaNumber } from "./meta.js";
import { blob, type BranchLinks, type BranchRow } from "./rows.js";
import { compactedTable, shardOf, shardTable } from "./shards.js";

type Row = unknown[];

/** A branch row's columns after its node key, as {@link branchRow} maps them. */
const BRANCH_COLUMNS = "b.key, b.height, b.size, b.hash, b.left_version, b.left_seq, b.right_version, b.right_seq, b.kids";

/** Reads of branch rows. */
export class BranchReader {
  readonly shardSize: number;
  /** Branch lookups by table name. */
  private branchStmts = new Map<string, Statement>();
  /** Versions up to `through` have their node rows in the compacted tables of generation `gen`. */
  private layout = { gen: 0, through: -1 };

  constructor(private readonly db: Connection) {
    this.shardSize = metaNumber(db, "shard_size") ?? 1000;
    this.reloadLayout();
  }

  /** A stored branch. */
  one(version: number, seq: number): BranchRow | undefined {
    const r = this.lookup(version, (s) => s.get(version, seq) as Row | undefined);
    return r === undefined ? undefined : branchRow(version, seq, r, 0);
  }

  /**
   * Branches by node key, many at once: each table's share in one query, in storage order. Returns what it found,
   * in no particular order (a missing one is the caller's to notice).
   */
  many(refs: ReadonlyArray<readonly [version: number, seq: number]>): BranchRow[] {
    return this.batch(refs, BRANCH_COLUMNS, (version, seq, r) => branchRow(version, seq, r, 2));
  }

  /**
   * The links of branches by node key, many at once, as {@link many} finds them: only the child keys, for a walk
   * of the tree's shape that derives each branch's key and height from its children (an export). Reading no key or
   * hash skips the two buffers a row would cost.
   */
  links(refs: ReadonlyArray<readonly [version: number, seq: number]>): BranchLinks[] {
    return this.batch(refs, "b.left_version, b.left_seq, b.right_version, b.right_seq", (version, seq, r) => ({
      version,
      seq,
      leftVersion: r[2] as number,
      leftSeq: r[3] as number,
      rightVersion: r[4] as number,
      rightSeq: r[5] as number,
    }));
  }

  /** Runs {@link many}' batched lookup for `columns` (after b.version, b.seq), each row mapped by `map`. */
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

  /** The branch table holding `version`'s branches: a shard, or the compacted table once pruning (or an import) moved them. */
  tableFor(version: number): string {
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
        if (!/no such table/.test((e as Error).message)) throw e;
        // Still no table after a reload: the row is missing, which the caller names (not a raw SQLite error).
        if (attempt > 0) return undefined;
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

/** The branch (`version`, `seq`) from a row whose columns key, height, size, hash, the child keys and kids start at `at`. */
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
    kids: r[at + 8] === null ? null : blob(r[at + 8]),
  };
}
