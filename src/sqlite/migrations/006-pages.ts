/**
 * Migration 006's conversion: the bottom of every stored tree of a store written before layout 3 (or by layout 3 over
 * such a store, which kept the older branch rows beside its pages) taken into pages, so that a change past the memory
 * budget reads one row whatever wrote the store. migrations/006_pages.sql only marks the store (`pages_upgrade` in
 * `meta`); src/sqlite/migrate.ts then runs {@link upgradeToPages} on every writer's open until the mark is gone. The
 * work is done in short transactions, each leaving a store that layout 3 reads as it is, so a SIGKILL at any moment
 * loses at most the transaction under way and the next open goes on from there.
 *
 * 1. **Pages.** Every stored tree (each checkpoint's, and the base's) is walked from its root through the branch
 *    rows with more than 16 leaves (the spine). Each branch row of at most 16 leaves met under a spine row (or as a
 *    root) becomes one page row: its subtree's branch rows and leaves, in post-order. In the same transaction every
 *    spine row and root that named it names the page's root instead, and the map records old node key → page. A
 *    subtree shared by several trees is one page, as it was one row. The page's `version` is the version of its
 *    root's node, so that pruning and rollback judge it as they judged that row: it is in the trees from that version
 *    on, and a rollback past it removes it.
 * 2. **Orphans.** The records of replaced branches name the converted roots by their old keys: they are rewritten to
 *    name the pages. A converted subtree missing from the newest tree is also recorded as replaced by the first walked
 *    tree after the newest that holds it: a store made before migration 003 never recorded what its versions replaced,
 *    and a later record than the true one only keeps the page until the same prune (pruning bases are checkpoints).
 * 3. **Rows.** No tree names a branch row of at most 16 leaves any more: all of them are deleted, and the map dropped.
 *
 * FROZEN ON PURPOSE, as 002-layout2.ts is: it writes layout 3's page format 1 and node keys exactly as they were when
 * migration 006 was made, with its own SQL and its own copy of those encodings, and imports no live store code
 * (test/upgrade.test.ts checks that).
 * @module
 */
import { existsSync, statSync } from "node:fs";
import type Database from "better-sqlite3";
import { concatBytes } from "../../base/bytes.js";
import { IavlError } from "../../base/errors.js";
import { WAL_SIZE_LIMIT_BYTES, type Connection } from "../connection.js";

/** Node keys: a sequence at or above LEAF_BASE names leaves row (sequence − LEAF_BASE); at or above PAGE_BASE, a page node. */
const LEAF_BASE = 2 ** 31;
const PAGE_BASE = 2 ** 50;
const PAGE_SLOTS = 32;
/** A canonical page: a subtree of at most this many leaves under a node of more. */
const PAGE_LEAVES = 16;
const PAGE_FORMAT = 1;
const MARK = "pages_upgrade";
const MAP = "pages_upgrade_map";
/** The stages, as the mark's value. */
const PAGES = 1;
const ORPHANS = 2;
const ROWS = 3;

/** How the conversion goes: for tests and progress reports. */
export interface PagesUpgradeOptions {
  /** Subtrees converted per transaction. */
  batch?: number;
  /** Called after each transaction of stage 1 with the subtrees converted so far and those left. */
  onBatch?: (done: number, left: number) => void;
}

interface BranchRow {
  version: number;
  seq: number;
  height: number;
  size: number;
  hash: Uint8Array;
  leftVersion: number;
  leftSeq: number;
  rightVersion: number;
  rightSeq: number;
  /** Read only with the row alone ({@link BranchTables.row}). */
  key?: Uint8Array;
}

/** A branch row of at most PAGE_LEAVES leaves that a spine row or a root names: the root of a page to be. */
interface Candidate {
  version: number;
  seq: number;
  /** Its row, read by the walk. Its key orders the work: one stretch of keys, in all trees, converted together. */
  row: BranchRow;
  /** The newest walked tree that holds it. */
  newest: number;
  /** The spine rows naming it: table, version, seq, and whether as their left child. */
  parents: Array<[string, number, number, boolean]>;
  /** True when a tree's root (a tree of at most PAGE_LEAVES leaves). */
  root: boolean;
}

function metaNumber(db: Connection, name: string): number | undefined {
  const v = db.prepare("SELECT value FROM meta WHERE name = ?").pluck().get(name);
  return v === undefined || v === null ? undefined : Number(v);
}

/** True while a store's conversion to pages is not finished (a reader must not read it yet). */
export function pagesUpgradePending(db: Connection): boolean {
  return metaNumber(db, MARK) !== undefined;
}

/** Where branch rows live, as layout 2 and 3 place them: the compacted table up to a version, shards after. */
class BranchTables {
  private readonly shardSize: number;
  private readonly gen: number;
  private readonly through: number;
  private readonly reads = new Map<string, Database.Statement<unknown[]>>();

  constructor(private readonly db: Connection) {
    this.shardSize = metaNumber(db, "shard_size") ?? 1000;
    this.gen = metaNumber(db, "compact_gen") ?? 0;
    this.through = metaNumber(db, "compact_through") ?? -1;
  }

  tableFor(version: number): string {
    return version <= this.through ? `branch_c${this.gen}` : `branch_${Math.floor(version / this.shardSize)}`;
  }

  /** The rows of `keys`, each table's share in one query in key order; a missing one is CORRUPT. */
  many(keys: ReadonlyArray<[number, number]>): BranchRow[] {
    const byTable = new Map<string, Array<[number, number]>>();
    const seen = new Set<string>();
    for (const k of keys) {
      const name = `${k[0]}/${k[1]}`;
      if (seen.has(name)) continue; // a subtree two roots of a batch share
      seen.add(name);
      const t = this.tableFor(k[0]);
      const a = byTable.get(t);
      if (a === undefined) byTable.set(t, [k]);
      else a.push(k);
    }
    const out: BranchRow[] = [];
    for (const [table, group] of byTable) {
      group.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
      const text = `SELECT b.version, b.seq, b.height, b.size, b.hash, b.left_version, b.left_seq, b.right_version, b.right_seq FROM json_each(?) AS j JOIN ${table} AS b ON b.version = j.value ->> 0 AND b.seq = j.value ->> 1`;
      const rows = this.db.prepare(text).raw().all(JSON.stringify(group)) as Array<[number, number, number, number, Uint8Array, number, number, number, number]>;
      if (rows.length !== group.length) throw new IavlError("CORRUPT", `branch rows of a stored tree are missing from ${table}`);
      for (const r of rows) out.push({ version: r[0], seq: r[1], height: r[2], size: r[3], hash: r[4], leftVersion: r[5], leftSeq: r[6], rightVersion: r[7], rightSeq: r[8] });
    }
    return out;
  }

  /** One row, with its key. */
  row(version: number, seq: number): BranchRow {
    const table = this.tableFor(version);
    let read = this.reads.get(table);
    if (read === undefined) {
      read = this.db.prepare(`SELECT height, size, hash, left_version, left_seq, right_version, right_seq, key FROM ${table} WHERE version = ? AND seq = ?`).raw();
      this.reads.set(table, read);
    }
    const r = read.get(version, seq) as [number, number, Uint8Array, number, number, number, number, Uint8Array] | undefined;
    if (r === undefined) throw new IavlError("CORRUPT", `branch ${version}/${seq} of a stored tree is missing from ${table}`);
    return { version, seq, height: r[0], size: r[1], hash: r[2], leftVersion: r[3], leftSeq: r[4], rightVersion: r[5], rightSeq: r[6], key: r[7] };
  }
}

/** A growing byte buffer: a page is built in it, then copied out. */
class Bytes {
  buf = new Uint8Array(4096);
  pos = 0;

  byte(b: number): void {
    this.room(1);
    this.buf[this.pos++] = b;
  }

  bytes(b: Uint8Array): void {
    this.room(b.length);
    // A loop: for the few bytes of a hash or key, `set` costs more than it copies.
    const buf = this.buf;
    let pos = this.pos;
    for (let i = 0; i < b.length; i++) buf[pos++] = b[i]!;
    this.pos = pos;
  }

  /** `n` as a uvarint (LEB128). */
  uvarint(n: number): void {
    this.room(10);
    while (n >= 0x80) {
      this.buf[this.pos++] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    this.buf[this.pos++] = n;
  }

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const grown = new Uint8Array(Math.max(2 * this.buf.length, this.pos + n));
    grown.set(this.buf.subarray(0, this.pos));
    this.buf = grown;
  }
}

/** A leaf as a page holds it. */
interface LeafRow {
  key: Uint8Array;
  hash: Uint8Array;
}

/**
 * The rows under a batch of subtree roots, read a level at a time, each table's share in one query in key order (and
 * the leaves by id), so that SQLite reads each database page once per batch instead of once per node.
 */
function readSubtrees(db: Connection, tables: BranchTables, roots: readonly Candidate[]): { branches: Map<string, BranchRow>; leaves: Map<number, LeafRow> } {
  const branches = new Map<string, BranchRow>();
  const leafIds: number[] = [];
  let rows: BranchRow[] = roots.map((c) => c.row);
  while (rows.length > 0) {
    const next: Array<[number, number]> = [];
    const child = (v: number, q: number): void => {
      if (q >= LEAF_BASE) leafIds.push(q - LEAF_BASE);
      else if (!branches.has(`${v}/${q}`)) next.push([v, q]);
    };
    for (const b of rows) {
      branches.set(`${b.version}/${b.seq}`, b);
      child(b.leftVersion, b.leftSeq);
      child(b.rightVersion, b.rightSeq);
    }
    rows = tables.many(next);
  }
  leafIds.sort((a, b) => a - b);
  // Leaves shared by two subtrees of the batch are asked once.
  const ids = leafIds.filter((id, i) => i === 0 || id !== leafIds[i - 1]);
  const leaves = new Map<number, LeafRow>();
  const read = db.prepare("SELECT l.id, l.key, l.hash FROM json_each(?) AS j JOIN leaves AS l ON l.id = j.value").raw();
  for (const [id, key, hash] of read.all(JSON.stringify(ids)) as Array<[number, Uint8Array, Uint8Array | null]>) {
    if (hash !== null) leaves.set(id, { key, hash });
  }
  return { branches, leaves };
}

/**
 * Page format 1: format (1), count (1), then per node in post-order: height (1), size (uvarint), version (uvarint),
 * hash (32); a leaf then its key length (uvarint), key and leaves row id (uvarint); a branch its children's indices
 * (1 each).
 */
function encodePage(out: Bytes, root: Candidate, branches: Map<string, BranchRow>, leaves: Map<number, LeafRow>): Uint8Array {
  out.pos = 0;
  out.byte(PAGE_FORMAT);
  out.byte(0);
  const sizes: number[] = [];
  const put = (version: number, seq: number): void => {
    if (seq >= LEAF_BASE) {
      const id = seq - LEAF_BASE;
      const l = leaves.get(id);
      if (l === undefined) throw new IavlError("CORRUPT", `leaf ${version}/${seq} of a stored tree has no leaves row`);
      out.byte(0);
      out.uvarint(1);
      out.uvarint(version);
      out.bytes(l.hash);
      out.uvarint(l.key.length);
      out.bytes(l.key);
      out.uvarint(id);
      sizes.push(1);
      return;
    }
    const b = branches.get(`${version}/${seq}`);
    if (b === undefined) throw new IavlError("CORRUPT", `branch ${version}/${seq} of a stored tree is missing`);
    put(b.leftVersion, b.leftSeq);
    put(b.rightVersion, b.rightSeq);
    const right = sizes.length - 1;
    const left = right - (2 * sizes[right]! - 1);
    out.byte(b.height);
    out.uvarint(b.size);
    out.uvarint(b.version);
    out.bytes(b.hash);
    out.byte(left);
    out.byte(right);
    sizes.push(b.size);
  };
  put(root.version, root.seq);
  out.buf[1] = sizes.length;
  return out.buf.slice(0, out.pos);
}

/** The stored trees' roots, newest first: each checkpoint's, and the base's (whose version row pruning may have taken). */
function treeRoots(db: Connection): Array<[tree: number, version: number, seq: number]> {
  const roots = db.prepare("SELECT version, root_version, root_seq FROM versions WHERE checkpoint = 1 AND root_seq IS NOT NULL").raw().all() as Array<[number, number, number]>;
  const base = metaNumber(db, "base_version");
  const baseSeq = metaNumber(db, "base_root_seq");
  if (base !== undefined && baseSeq !== undefined && !roots.some((r) => r[0] === base)) roots.push([base, metaNumber(db, "base_root_version")!, baseSeq]);
  return roots.sort((a, b) => b[0] - a[0]);
}

/** Walks the spine of every tree in `roots` (newest first): the subtrees still to convert, by node key. */
function findCandidates(tables: BranchTables, roots: ReturnType<typeof treeRoots>): Map<string, Candidate> {
  const candidates = new Map<string, Candidate>();
  const spine = new Set<string>();
  // Tree by tree, newest first: a subtree is first met in the newest tree holding it.
  for (const [tree, version, seq] of roots) {
    const stack: BranchRow[] = [];
    const reach = (version: number, seq: number, parent: [string, number, number, boolean] | undefined): void => {
      if (seq >= LEAF_BASE) return; // a leaf, or a page: stored as layout 3 stores them
      const key = `${version}/${seq}`;
      const known = candidates.get(key);
      if (known !== undefined) {
        if (parent !== undefined) known.parents.push(parent);
        else known.root = true;
        return;
      }
      if (spine.has(key)) return;
      const row = tables.row(version, seq);
      if (row.size <= PAGE_LEAVES) {
        candidates.set(key, { version, seq, row, newest: tree, parents: parent === undefined ? [] : [parent], root: parent === undefined });
        return;
      }
      spine.add(key);
      stack.push(row);
    };
    reach(version, seq, undefined);
    while (stack.length > 0) {
      const b = stack.pop()!;
      const table = tables.tableFor(b.version);
      reach(b.leftVersion, b.leftSeq, [table, b.version, b.seq, true]);
      reach(b.rightVersion, b.rightSeq, [table, b.version, b.seq, false]);
    }
  }
  return candidates;
}

/** Stage 1: converts the subtrees still named by a spine row or a root, `batch` of them per transaction. */
function convertSubtrees(db: Connection, options: PagesUpgradeOptions): void {
  const tables = new BranchTables(db);
  const roots = treeRoots(db);
  const candidates = findCandidates(tables, roots);
  const trees = roots.map((r) => r[0]).reverse();
  const newestTree = trees[trees.length - 1];
  const all = [...candidates.values()].sort((a, b) => Buffer.compare(a.row.key!, b.row.key!));
  const batch = options.batch ?? 5000;
  const insertPage = db.prepare("INSERT INTO pages (version, bytes) VALUES (?, ?)");
  const mapped = db.prepare(`INSERT INTO ${MAP} (version, seq, page) VALUES (?, ?, ?)`);
  const setRoot = db.prepare("UPDATE versions SET root_version = ?, root_seq = ? WHERE root_version = ? AND root_seq = ? AND checkpoint = 1");
  const orphansOf = db.prepare("SELECT nodes FROM orphaned_branches WHERE version = ?").pluck();
  const setOrphans = db.prepare("INSERT OR REPLACE INTO orphaned_branches (version, nodes) VALUES (?, ?)");
  const relinks = new Map<string, Database.Statement<unknown[]>>();
  const relink = (table: string, left: boolean): Database.Statement<unknown[]> => {
    const text = `UPDATE ${table} SET ${left ? "left" : "right"}_seq = ? WHERE version = ? AND seq = ?`;
    let s = relinks.get(text);
    if (s === undefined) relinks.set(text, (s = db.prepare(text)));
    return s;
  };
  for (let from = 0; from < all.length; from += batch) {
    db.transaction(() => {
      const replaced = new Map<number, number[]>();
      const baseRoot = [metaNumber(db, "base_root_version"), metaNumber(db, "base_root_seq")];
      const slice = all.slice(from, from + batch);
      const { branches, leaves } = readSubtrees(db, tables, slice);
      const bytes = new Bytes();
      const moves: Array<[table: string, version: number, seq: number, left: boolean, page: number]> = [];
      for (const c of slice) {
        const id = Number(insertPage.run(c.version, encodePage(bytes, c, branches, leaves)).lastInsertRowid);
        const seq = PAGE_BASE + id * PAGE_SLOTS;
        mapped.run(c.version, c.seq, id);
        for (const [table, pv, ps, left] of c.parents) moves.push([table, pv, ps, left, seq]);
        if (c.root) setRoot.run(c.version, seq, c.version, c.seq);
        if (c.root && baseRoot[0] === c.version && baseRoot[1] === c.seq) {
          db.prepare("UPDATE meta SET value = ? WHERE name = 'base_root_seq'").run(seq);
        }
        if (c.newest !== newestTree) {
          const after = trees[trees.indexOf(c.newest) + 1]!;
          const keys = replaced.get(after) ?? [];
          keys.push(c.version, seq);
          replaced.set(after, keys);
        }
      }
      // In each table's key order, so that the updates walk its pages once.
      moves.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1] || a[2] - b[2]));
      for (const [table, pv, ps, left, seq] of moves) relink(table, left).run(seq, pv, ps);
      for (const [version, keys] of replaced) {
        const had = orphansOf.get(version) as Uint8Array | undefined;
        setOrphans.run(version, had === undefined ? packKeys(keys) : concatBytes(had, packKeys(keys)));
      }
    })();
    paceWal(db);
    options.onBatch?.(Math.min(from + batch, all.length), Math.max(all.length - from - batch, 0));
  }
}

/**
 * Copies the WAL into the database file (PASSIVE: waiting for no one) once it is past the size a restarted one is cut
 * back to, so that the next transaction starts it over: the conversion writes about half the store's size, and a
 * writer's connection never checkpoints by itself (at 1M keys the WAL reached 824 MiB before this). What the prune
 * thread does with sqlite/wal.ts's `paceWal`, which this frozen module may not import.
 */
function paceWal(db: Connection): void {
  const wal = `${db.name}-wal`;
  if (existsSync(wal) && statSync(wal).size > WAL_SIZE_LIMIT_BYTES) db.pragma("wal_checkpoint(PASSIVE)");
}

/** Node keys packed as `orphaned_branches` packs them: version and sequence, each a little-endian float64. */
function packKeys(keys: readonly number[]): Uint8Array {
  const out = new Uint8Array(keys.length * 8);
  const view = new DataView(out.buffer);
  keys.forEach((k, i) => view.setFloat64(i * 8, k, true));
  return out;
}

/** Stage 2: the orphan records name pages instead of the rows they replaced (rewriting one twice changes nothing). */
function renameOrphans(db: Connection): void {
  const pageOf = db.prepare(`SELECT page FROM ${MAP} WHERE version = ? AND seq = ?`).pluck();
  const update = db.prepare("UPDATE orphaned_branches SET nodes = ? WHERE version = ?");
  let after = -1;
  for (;;) {
    const rows = db.prepare("SELECT version, nodes FROM orphaned_branches WHERE version > ? ORDER BY version LIMIT 256").raw().all(after) as Array<[number, Uint8Array]>;
    if (rows.length === 0) return;
    db.transaction(() => {
      for (const [version, nodes] of rows) {
        const view = new DataView(nodes.buffer, nodes.byteOffset, nodes.byteLength);
        let changed = false;
        for (let i = 0; i < nodes.byteLength; i += 16) {
          const seq = view.getFloat64(i + 8, true);
          if (seq >= LEAF_BASE) continue;
          const page = pageOf.get(view.getFloat64(i, true), seq) as number | undefined;
          if (page === undefined) continue;
          view.setFloat64(i + 8, PAGE_BASE + page * PAGE_SLOTS, true);
          changed = true;
        }
        if (changed) update.run(nodes, version);
      }
    })();
    after = rows[rows.length - 1]![0];
  }
}

/**
 * Stage 3: every branch row of at most PAGE_LEAVES leaves goes (no tree names one now). Each table that holds any is
 * copied without them, in one transaction per table: far fewer rows stay than go.
 */
function deleteSmallRows(db: Connection): void {
  const tables = db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name LIKE 'branch\\_%' ESCAPE '\\'").raw().all() as Array<[string, string]>;
  for (const [table, create] of tables) {
    if (db.prepare(`SELECT 1 FROM ${table} WHERE size <= ? LIMIT 1`).get(PAGE_LEAVES) === undefined) continue;
    const kept = `${table}_spine`;
    db.transaction(() => {
      db.exec(`DROP TABLE IF EXISTS ${kept}`);
      db.exec(create.replace(table, kept));
      db.prepare(`INSERT INTO ${kept} SELECT * FROM ${table} WHERE size > ? ORDER BY version, seq`).run(PAGE_LEAVES);
      db.exec(`DROP TABLE ${table}`);
      db.exec(`ALTER TABLE ${kept} RENAME TO ${table}`);
    })();
    paceWal(db);
  }
}

/**
 * Finishes the conversion of a store marked by migration 006, from wherever an earlier open stopped; nothing when it
 * is not marked. Runs outside any transaction, under the writer's lock.
 */
export function upgradeToPages(db: Connection, options: PagesUpgradeOptions = {}): void {
  const stage = metaNumber(db, MARK);
  if (stage === undefined) return;
  const setStage = (s: number): void => void db.prepare("UPDATE meta SET value = ? WHERE name = ?").run(s, MARK);
  db.exec(`CREATE TABLE IF NOT EXISTS ${MAP} (version INTEGER NOT NULL, seq INTEGER NOT NULL, page INTEGER NOT NULL, PRIMARY KEY (version, seq)) WITHOUT ROWID`);
  if (stage <= PAGES) {
    convertSubtrees(db, options);
    setStage(ORPHANS);
  }
  if (stage <= ORPHANS) {
    renameOrphans(db);
    setStage(ROWS);
  }
  deleteSmallRows(db);
  db.transaction(() => {
    db.exec(`DROP TABLE ${MAP}`);
    db.prepare("DELETE FROM meta WHERE name = ?").run(MARK);
  })();
}
