/**
 * The steps of a prune, each a bounded amount of work in short transactions, so that the writer's commits never
 * wait long for the database. Every step can be repeated after a crash: nothing a kept version needs is removed
 * before the step that makes it unnecessary has committed.
 *
 * 1. `markPruned`: version rows below the first kept version are deleted (readers get VERSION_PRUNED from then on)
 *    and the checkpoint that replays of kept versions start from is recorded as the base.
 * 2. `trimValues`: in key order, value rows that no kept version can read are deleted.
 * 3. `copySurvivors`: the base tree is walked; its nodes stored in shards that are about to go are copied into a
 *    new generation of compacted tables.
 * 4. `swapShards`: in one transaction, the new generation becomes the place of old rows, and the old generation and
 *    the pruned shards are dropped.
 * 5. `reclaim`: the freed pages are returned to the file system (incremental vacuum), so the file really shrinks.
 * @module
 */
import type Database from "better-sqlite3";
import { StoreSource } from "../checkpoint/node-source.js";
import { compactedTables, createNodeTables, shardTables } from "../sqlite/shards.js";
import { OpKind, StoreReader } from "../sqlite/store.js";
import type { Node } from "../tree/node.js";

/** What a prune will do, decided in step 1. */
export interface PrunePlan {
  /** The first version kept (besides snapshots). */
  keepFrom: number;
  /** Versions before keepFrom kept as snapshots (every keepEvery-th), each a checkpoint; oldest first. */
  snapshots: number[];
  /** The checkpoint kept versions replay from (its row may itself be pruned): version and root node key. */
  base: { version: number; rootVersion: number | null; rootSeq: number | null } | undefined;
  /** Shards wholly at or before the base: their survivors move to the compacted tables and they are dropped. */
  dropShards: number[];
  /** The last version whose node rows will live in the compacted tables. */
  compactThrough: number;
  /** Generation of the compacted tables to build. */
  gen: number;
  /** Versions removed. */
  removed: number;
}

function meta(db: Database.Database, name: string): unknown {
  return db.prepare("SELECT value FROM meta WHERE name = ?").pluck().get(name) ?? undefined;
}

function setMeta(db: Database.Database, name: string, value: number | null): void {
  db.prepare("INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)").run(name, value);
}

/** The recorded base checkpoint of replays, once its own version row was pruned. */
export function recordedBase(db: Database.Database): PrunePlan["base"] {
  const v = meta(db, "base_version");
  if (v === undefined || v === null) return undefined;
  return {
    version: Number(v),
    rootVersion: (meta(db, "base_root_version") as number | null) ?? null,
    rootSeq: (meta(db, "base_root_seq") as number | null) ?? null,
  };
}

/**
 * Step 1: removes version rows below `keepFrom` (the latest is always kept), except, with `keepEvery`, the
 * checkpointed versions that are multiples of it, and plans the rest.
 */
export function markPruned(db: Database.Database, upTo: number, keepEvery?: number): PrunePlan {
  return db
    .transaction((): PrunePlan => {
      const latest = (db.prepare("SELECT max(version) FROM versions").pluck().get() as number | null) ?? 0;
      const keepFrom = Math.min(upTo + 1, latest);
      const cp = db
        .prepare("SELECT version, root_version, root_seq FROM versions WHERE checkpoint = 1 AND version <= ? ORDER BY version DESC LIMIT 1")
        .raw()
        .get(keepFrom) as [number, number | null, number | null] | undefined;
      const base = cp !== undefined ? { version: cp[0], rootVersion: cp[1], rootSeq: cp[2] } : recordedBase(db);
      const snapshots =
        keepEvery === undefined
          ? []
          : (db
              .prepare("SELECT version FROM versions WHERE version < ? AND checkpoint = 1 AND version % ? = 0 ORDER BY version")
              .pluck()
              .all(keepFrom, keepEvery) as number[]);
      const removed =
        snapshots.length === 0
          ? db.prepare("DELETE FROM versions WHERE version < ?").run(keepFrom).changes
          : db.prepare(`DELETE FROM versions WHERE version < ? AND version NOT IN (${snapshots.join(",")})`).run(keepFrom).changes;
      if (base !== undefined && base.version < keepFrom) {
        setMeta(db, "base_version", base.version);
        setMeta(db, "base_root_version", base.rootVersion);
        setMeta(db, "base_root_seq", base.rootSeq);
      }
      setMeta(db, "pruned_to", keepFrom - 1);
      const shardSize = Number(meta(db, "shard_size") ?? 1000);
      const limit = base?.version ?? 0;
      // A shard can go when every version in it is at or before the base: replays start after the base.
      const dropShards = db.prepare("SELECT id FROM shards WHERE last <= ? ORDER BY id").pluck().all(limit) as number[];
      const compactThrough = dropShards.length > 0 ? (dropShards[dropShards.length - 1]! + 1) * shardSize - 1 : -1;
      const gen = Number(meta(db, "compact_gen") ?? 0) + 1;
      return { keepFrom, snapshots, base, dropShards, compactThrough, gen, removed };
    })
    .immediate();
}

/**
 * Which rows of one key no kept version reads. `rows` are the key's rows before keepFrom, oldest first; a row is
 * read by version b when it is the newest at or before b. The versions that matter are the snapshots and, unless
 * the key has a row at keepFrom itself, keepFrom − 1 (what every later version falls back to). A removal row that
 * no older kept row sits under is dropped too: without it, reads find nothing, as they should.
 */
export function deadRows(rows: Array<{ version: number; removed: boolean }>, snapshots: number[], keepFrom: number, rowAtKeep: boolean): number[] {
  const bounds = rowAtKeep ? snapshots : [...snapshots, keepFrom - 1];
  const dead: number[] = [];
  let keptOlder = false;
  for (let i = 0; i < rows.length; i++) {
    const v = rows[i]!.version;
    const next = rows[i + 1]?.version ?? Number.POSITIVE_INFINITY;
    const needed = bounds.some((b) => v <= b && b < next);
    if (!needed || (rows[i]!.removed && !keptOlder)) dead.push(v);
    else keptOlder = true;
  }
  return dead;
}

/**
 * Step 2, one page: deletes the value rows (at or after key `from`) that no kept version can read (see
 * {@link deadRows}). Returns the key to continue from, or undefined when done.
 */
export function trimValues(db: Database.Database, keepFrom: number, snapshots: number[], from: Uint8Array | undefined, pageRows = 4000): Uint8Array | undefined {
  const rows = db
    .prepare(`SELECT key, version, value IS NULL FROM kv WHERE ${from === undefined ? "1" : "key >= ?"} AND version <= ? ORDER BY key, version LIMIT ?`)
    .raw()
    .all(...(from === undefined ? [] : [from]), keepFrom, pageRows) as Array<[Uint8Array, number, number]>;
  if (rows.length === 0) return undefined;
  // The last key of a full page may continue on the next page: leave it for then.
  const full = rows.length === pageRows;
  const lastKey = rows[rows.length - 1]![0];
  const del = db.prepare("DELETE FROM kv WHERE key = ? AND version = ?");
  db.transaction(() => {
    let i = 0;
    while (i < rows.length) {
      const key = rows[i]![0];
      if (full && Buffer.compare(key, lastKey) === 0) break;
      const group: Array<{ version: number; removed: boolean }> = [];
      let atKeep = false;
      for (; i < rows.length && Buffer.compare(rows[i]![0], key) === 0; i++) {
        if (rows[i]![1] === keepFrom) atKeep = true;
        else group.push({ version: rows[i]![1], removed: rows[i]![2] === 1 });
      }
      for (const v of deadRows(group, snapshots, keepFrom, atKeep)) del.run(key, v);
    }
  }).immediate();
  if (!full) return undefined;
  if (Buffer.compare(rows[0]![0], lastKey) === 0) {
    // One key has more rows than a page: trim it alone, then move past it.
    trimKey(db, lastKey, keepFrom, snapshots);
    return Buffer.concat([lastKey, Buffer.from([0])]);
  }
  return lastKey;
}

function trimKey(db: Database.Database, key: Uint8Array, keepFrom: number, snapshots: number[]): void {
  db.transaction(() => {
    const all = db.prepare("SELECT version, value IS NULL FROM kv WHERE key = ? AND version <= ? ORDER BY version").raw().all(key, keepFrom) as Array<[number, number]>;
    const atKeep = all.some(([v]) => v === keepFrom);
    const group = all.filter(([v]) => v < keepFrom).map(([version, n]) => ({ version, removed: n === 1 }));
    const del = db.prepare("DELETE FROM kv WHERE key = ? AND version = ?");
    for (const v of deadRows(group, snapshots, keepFrom, atKeep)) del.run(key, v);
  }).immediate();
}

/**
 * Step 3: walks the base tree and copies every node at or before `compactThrough` into the compacted tables of
 * generation `gen` (created empty first, so that a repeated step starts clean). `onNodes` reports progress.
 */
export function copySurvivors(db: Database.Database, plan: PrunePlan, onNodes?: (n: number) => void): void {
  const t = compactedTables(plan.gen);
  db.exec(`DROP TABLE IF EXISTS ${t.log}; DROP TABLE IF EXISTS ${t.branch};`);
  createNodeTables(db, t);
  if (plan.compactThrough < 0) return;
  const store = new StoreReader(db);
  const loader = new StoreSource(store);
  const src = loader.uncached();
  // The trees that stay readable from these rows: the replay base and every snapshot kept before it.
  const roots: Node[] = [];
  const base = plan.base;
  if (base !== undefined && base.rootVersion !== null && base.rootSeq !== null) roots.push(loader.load({ version: base.rootVersion, seq: base.rootSeq }));
  for (const v of plan.snapshots) {
    const row = store.version(v);
    if (row?.rootVersion != null && row.rootSeq != null) roots.push(loader.load({ version: row.rootVersion, seq: row.rootSeq }));
  }
  const insLeaf = db.prepare(`INSERT OR REPLACE INTO ${t.log} (version, seq, key, kind, hash) VALUES (?, ?, ?, ${OpKind.Leaf}, ?)`);
  const insBranch = db.prepare(
    `INSERT OR REPLACE INTO ${t.branch} (version, seq, key, height, size, hash, left_version, left_seq, right_version, right_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  let pending: Node[] = [];
  let copied = 0;
  const flush = (): void => {
    const batch = pending;
    pending = [];
    db.transaction(() => {
      for (const n of batch) {
        if (n.height === 0) insLeaf.run(n.version, n.seq, n.key, n.hash);
        else insBranch.run(n.version, n.seq, n.key, n.height, n.size, n.hash, n.leftKey!.version, n.leftKey!.seq, n.rightKey!.version, n.rightKey!.seq);
      }
    }).immediate();
    copied += batch.length;
    onNodes?.(copied);
  };
  // Children are never newer than their parent, so a subtree whose root is past compactThrough may still hold
  // survivors; one at or before it is all survivors.
  // A node key names one immutable subtree: trees share most of theirs, and each is walked once.
  const seen = new Set<string>();
  const stack: Node[] = roots;
  while (stack.length > 0) {
    const n = stack.pop()!;
    const id = `${n.version}/${n.seq}`;
    if (seen.has(id)) continue;
    seen.add(id);
    if (n.version <= plan.compactThrough) pending.push(n);
    if (pending.length >= 2000) flush();
    if (n.height > 0) stack.push(src.right(n), src.left(n));
  }
  flush();
}

/** Step 4: the new compacted generation replaces the old one and the pruned shards, in one transaction. */
export function swapShards(db: Database.Database, plan: PrunePlan): void {
  db.transaction(() => {
    const old = Number(meta(db, "compact_gen") ?? 0);
    if (plan.compactThrough >= 0) {
      setMeta(db, "compact_gen", plan.gen);
      setMeta(db, "compact_through", plan.compactThrough);
      const o = compactedTables(old);
      db.exec(`DROP TABLE IF EXISTS ${o.log}; DROP TABLE IF EXISTS ${o.branch};`);
      for (const id of plan.dropShards) {
        const s = shardTables(id);
        db.exec(`DROP TABLE IF EXISTS ${s.log}; DROP TABLE IF EXISTS ${s.branch};`);
        db.prepare("DELETE FROM shards WHERE id = ?").run(id);
      }
    } else {
      const n = compactedTables(plan.gen);
      db.exec(`DROP TABLE IF EXISTS ${n.log}; DROP TABLE IF EXISTS ${n.branch};`);
    }
  }).immediate();
}

/** Step 5, one slice: returns up to `pages` free pages to the file system; returns how many remain free. */
export function reclaim(db: Database.Database, pages = 2048): number {
  db.pragma(`incremental_vacuum(${pages})`);
  return db.pragma("freelist_count", { simple: true }) as number;
}
