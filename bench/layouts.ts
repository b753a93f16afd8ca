/**
 * Storage layout experiment (issue "Storage layout 2"): the mixed profile's write stream, with no tree, written into
 * candidate SQLite layouts side by side (each version goes to every candidate in turn, so machine noise hits all of
 * them alike), with pruning at a keepRecent window; per 50-version window: ops/s of writes alone and of writes plus
 * pruning, then latest and historic gets and the files' size.
 *
 *   npx tsx bench/layouts.ts [--versions 400] [--keep 100] [--scale 0.3] [--only a,b] [--page 4096]
 * @module
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { mixedProfiles, Workload, type Change } from "./workload.js";

type Db = Database.Database;

/** One store's file in one layout. */
interface Store {
  /** Writes one version's changes of this store, in one transaction. */
  write(version: number, changes: Change[]): void;
  /** Removes what no version ≥ keepFrom reads. */
  prune(keepFrom: number): void;
  get(key: Uint8Array, version: number): Uint8Array | undefined;
}

interface Layout {
  name: string;
  open(db: Db): Store;
}

const HASH = randomBytes(32);
const arg = (name: string, dflt: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : dflt;
};

function pragmas(db: Db, page: number, autoVacuum: "NONE" | "INCREMENTAL"): void {
  db.pragma(`page_size = ${page}`);
  db.pragma(`auto_vacuum = ${autoVacuum}`);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("cache_size = -32768");
}

/** A plain key-value table, no history: the floors. */
function plain(withoutRowid: boolean): Layout {
  return {
    name: withoutRowid ? "plain WITHOUT ROWID" : "plain rowid",
    open(db) {
      db.exec(`CREATE TABLE kv (key BLOB PRIMARY KEY, value BLOB)${withoutRowid ? " WITHOUT ROWID" : ""}`);
      const put = db.prepare("INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value");
      const del = db.prepare("DELETE FROM kv WHERE key = ?");
      const get = db.prepare("SELECT value FROM kv WHERE key = ?").pluck();
      return {
        write: (_v, cs) =>
          db.transaction(() => {
            for (const c of cs) c.delete ? del.run(c.key) : put.run(c.key, c.value);
          })(),
        prune: () => undefined,
        get: (k) => get.get(k) as Uint8Array | undefined,
      };
    },
  };
}

/**
 * Deletes, in key order, the rows of `table` (key, version, …) no version ≥ keepFrom reads: for each key every row
 * older than its newest row ≤ keepFrom, and that newest row too when it is a removal. `del` gets (key, version).
 */
function sweep(db: Db, select: string, keepFrom: number, del: (key: Uint8Array, version: number, ref: unknown) => void): void {
  const rows = db.prepare(select).raw().iterate(keepFrom) as IterableIterator<[Uint8Array, number, number, unknown]>;
  const doomed: Array<[Uint8Array, number, unknown]> = [];
  let prev: [Uint8Array, number, number, unknown] | undefined;
  for (const r of rows) {
    // Rows come in (key, version) order: a row is dead when the next row of the same key is also ≤ keepFrom.
    if (prev !== undefined && Buffer.compare(prev[0], r[0]) === 0) doomed.push([prev[0], prev[1], prev[3]]);
    else if (prev !== undefined && prev[2] === 1) doomed.push([prev[0], prev[1], prev[3]]);
    prev = r;
  }
  if (prev !== undefined && prev[2] === 1) doomed.push([prev[0], prev[1], prev[3]]);
  db.transaction(() => {
    for (const [k, v, ref] of doomed) del(k, v, ref);
  })();
}

/** Layout 1: values inline in a (key, version) WITHOUT ROWID table. */
const layout1: Layout = {
  name: "layout 1: kv (key, version, value) WITHOUT ROWID",
  open(db) {
    db.exec("CREATE TABLE kv (key BLOB NOT NULL, version INTEGER NOT NULL, value BLOB, PRIMARY KEY (key, version)) WITHOUT ROWID");
    const ins = db.prepare("INSERT INTO kv (key, version, value) VALUES (?, ?, ?)");
    const get = db.prepare("SELECT value FROM kv WHERE key = ? AND version <= ? ORDER BY version DESC LIMIT 1").pluck();
    const del = db.prepare("DELETE FROM kv WHERE key = ? AND version = ?");
    return {
      write: (v, cs) =>
        db.transaction(() => {
          for (const c of cs) ins.run(c.key, v, c.delete ? null : c.value);
        })(),
      prune: (keepFrom) => sweep(db, "SELECT key, version, value IS NULL, NULL FROM kv WHERE version <= ? ORDER BY key, version", keepFrom, (k, v) => del.run(k, v)),
      get: (k, v) => (get.get(k, v) as Uint8Array | null | undefined) ?? undefined,
    };
  },
};

/** One rowid heap of value rows (appended in version order) with a (key, version) index; dead rows deleted. */
const heapIndexed: Layout = {
  name: "heap + (key, version) index, dead rows deleted",
  open(db) {
    db.exec(`CREATE TABLE heap (id INTEGER PRIMARY KEY, key BLOB NOT NULL, version INTEGER NOT NULL, hash BLOB, value BLOB);
             CREATE UNIQUE INDEX heap_kv ON heap (key, version);`);
    const ins = db.prepare("INSERT INTO heap (key, version, hash, value) VALUES (?, ?, ?, ?)");
    const get = db.prepare("SELECT value FROM heap WHERE key = ? AND version <= ? ORDER BY version DESC LIMIT 1").pluck();
    const del = db.prepare("DELETE FROM heap WHERE id = ?");
    return {
      write: (v, cs) =>
        db.transaction(() => {
          for (const c of cs) ins.run(c.key, v, c.delete ? null : HASH, c.delete ? null : c.value);
        })(),
      prune: (keepFrom) =>
        sweep(db, "SELECT key, version, value IS NULL, id FROM heap WHERE version <= ? ORDER BY key, version", keepFrom, (_k, _v, id) => del.run(id)),
      get: (k, v) => (get.get(k, v) as Uint8Array | null | undefined) ?? undefined,
    };
  },
};

/**
 * Value heaps sharded by version range with one (key, version) → id index: prune deletes dead index rows, and a
 * shard wholly before keepFrom is dropped once its live rows were copied into a survivors table (same ids).
 */
function sharded(span: number): Layout {
  return {
    name: `heap shards of ${span} versions + index, survivors copied, shards dropped`,
    open(db) {
      db.exec(`CREATE TABLE idx (key BLOB NOT NULL, version INTEGER NOT NULL, id INTEGER, PRIMARY KEY (key, version)) WITHOUT ROWID;
               CREATE TABLE keep (id INTEGER PRIMARY KEY, key BLOB, hash BLOB, value BLOB);`);
      let nextId = 1;
      const shards = new Map<number, { first: number; ins: Database.Statement }>();
      const shardOf = (v: number): number => Math.floor(v / span);
      /** id ranges: shard → [first id, last id]. */
      const idRange = new Map<number, [number, number]>();
      const dropped = new Set<number>();
      const table = (s: number): string => (dropped.has(s) ? "keep" : `heap_${s}`);
      const shardOfId = (id: number): number => {
        for (const [s, [a, b]] of idRange) if (id >= a && id <= b) return s;
        return -1;
      };
      const insIdx = db.prepare("INSERT INTO idx (key, version, id) VALUES (?, ?, ?)");
      const findIdx = db.prepare("SELECT id FROM idx WHERE key = ? AND version <= ? ORDER BY version DESC LIMIT 1").pluck();
      const delIdx = db.prepare("DELETE FROM idx WHERE key = ? AND version = ?");
      const gets = new Map<string, Database.Statement>();
      return {
        write: (v, cs) =>
          db.transaction(() => {
            const s = shardOf(v);
            let sh = shards.get(s);
            if (sh === undefined) {
              db.exec(`CREATE TABLE heap_${s} (id INTEGER PRIMARY KEY, key BLOB, hash BLOB, value BLOB)`);
              sh = { first: nextId, ins: db.prepare(`INSERT INTO heap_${s} (id, key, hash, value) VALUES (?, ?, ?, ?)`) };
              shards.set(s, sh);
            }
            for (const c of cs) {
              if (c.delete) insIdx.run(c.key, v, null);
              else {
                const id = nextId++;
                sh.ins.run(id, c.key, HASH, c.value);
                insIdx.run(c.key, v, id);
              }
            }
            idRange.set(s, [sh.first, nextId - 1]);
          })(),
        prune: (keepFrom) => {
          sweep(db, "SELECT key, version, id IS NULL, NULL FROM idx WHERE version <= ? ORDER BY key, version", keepFrom, (k, v) => delIdx.run(k, v));
          for (const s of [...shards.keys()]) {
            if ((s + 1) * span > keepFrom || dropped.has(s)) continue;
            const [a, b] = idRange.get(s)!;
            db.transaction(() => {
              db.prepare(`INSERT INTO keep SELECT * FROM heap_${s} WHERE id IN (SELECT id FROM idx WHERE id BETWEEN ? AND ?)`).run(a, b);
              db.exec(`DROP TABLE heap_${s}`);
            })();
            dropped.add(s);
            gets.clear();
          }
        },
        get: (k, v) => {
          const id = findIdx.get(k, v) as number | null | undefined;
          if (id === null || id === undefined) return undefined;
          const t = table(shardOfId(id));
          let g = gets.get(t);
          if (g === undefined) gets.set(t, (g = db.prepare(`SELECT value FROM ${t} WHERE id = ?`).pluck()));
          return g.get(id) as Uint8Array | undefined;
        },
      };
    },
  };
}

/**
 * Layout 2: one row per key changed per version in a rowid heap appended in version order (ids given in that order,
 * the leaf hash in the row), a (key, version) index, and an incremental prune: for each version leaving the window,
 * each of its rows makes the key's previous row dead, and a removal row dies with it.
 */
const layout2: Layout = {
  name: "layout 2: heap + index, incremental prune",
  open(db) {
    db.exec(`CREATE TABLE leaves (id INTEGER PRIMARY KEY, version INTEGER NOT NULL, key BLOB NOT NULL, hash BLOB, value BLOB);
             CREATE UNIQUE INDEX leaves_key ON leaves (key, version);`);
    const ins = db.prepare("INSERT INTO leaves (id, version, key, hash, value) VALUES (?, ?, ?, ?, ?)");
    const get = db.prepare("SELECT value FROM leaves WHERE key = ? AND version <= ? ORDER BY version DESC LIMIT 1").pluck();
    const rowsOf = db.prepare("SELECT id, key, hash IS NULL FROM leaves WHERE id BETWEEN ? AND ?").raw();
    const prev = db.prepare("SELECT id FROM leaves WHERE key = ? AND version < ? ORDER BY version DESC LIMIT 1").pluck();
    const del = db.prepare("DELETE FROM leaves WHERE id = ?");
    const ids = new Map<number, [number, number]>();
    let nextId = 1;
    let prunedTo = 0;
    return {
      write: (v, cs) =>
        db.transaction(() => {
          const first = nextId;
          for (const c of cs) ins.run(nextId++, v, c.key, c.delete ? null : HASH, c.delete ? null : c.value);
          ids.set(v, [first, nextId - 1]);
        })(),
      prune: (keepFrom) =>
        db.transaction(() => {
          for (let v = prunedTo + 1; v <= keepFrom; v++) {
            const r = ids.get(v);
            if (r === undefined) continue;
            for (const [id, key, tomb] of rowsOf.all(r[0], r[1]) as Array<[number, Uint8Array, number]>) {
              const p = prev.get(key, v) as number | undefined;
              if (p !== undefined) del.run(p);
              if (tomb === 1) del.run(id);
            }
            ids.delete(v);
          }
          prunedTo = keepFrom;
        })(),
      get: (k, v) => (get.get(k, v) as Uint8Array | null | undefined) ?? undefined,
    };
  },
};

const LAYOUTS: Layout[] = [plain(false), plain(true), layout1, heapIndexed, sharded(50), layout2];

function dirBytes(dir: string): number {
  return readdirSync(dir).reduce((n, f) => n + statSync(join(dir, f)).size, 0);
}

async function main(): Promise<void> {
  const versions = Number(arg("versions", "400"));
  const keep = Number(arg("keep", "100"));
  const scale = Number(arg("scale", "0.3"));
  const page = Number(arg("page", "4096"));
  const autoVacuum = arg("vacuum", "NONE") as "NONE" | "INCREMENTAL";
  const only = arg("only", "");
  const layouts = LAYOUTS.filter((_, i) => only === "" || only.split(",").includes(String(i)));
  const profiles = mixedProfiles(10_000).map((p) => ({ ...p, initialSize: Math.round(p.initialSize * scale) }));
  const out = fileURLToPath(new URL("./out/", import.meta.url));
  mkdirSync(out, { recursive: true });
  const root = mkdtempSync(join(out, "tmp-layouts-"));
  try {
    const runs = layouts.map((l, i) => {
      const dir = join(root, String(i));
      mkdirSync(dir);
      const stores = new Map(
        profiles.map((p) => {
          const db = new Database(join(dir, `${p.name}.sqlite`));
          pragmas(db, page, autoVacuum);
          return [p.name, { db, store: l.open(db) }];
        }),
      );
      return { layout: l, dir, stores, writeMs: 0, pruneMs: 0, windows: [] as string[] };
    });
    const work = new Workload(profiles, 21);
    // The net change of each key per store, as a store writes it (a key may be touched twice in one version).
    const byStore = (cs: Iterable<Change>): Map<string, Change[]> => {
      const m = new Map<string, Map<string, Change>>();
      for (const c of cs) {
        let a = m.get(c.store);
        if (a === undefined) m.set(c.store, (a = new Map()));
        a.set(Buffer.from(c.key).toString("latin1"), c);
      }
      return new Map([...m].map(([s, a]) => [s, [...a.values()]]));
    };
    let ops = 0;
    const window = 50;
    for (let v = 1; v <= versions; v++) {
      const changes = byStore(v === 1 ? work.initial() : work.nextVersion());
      const n = [...changes.values()].reduce((a, c) => a + c.length, 0);
      if (v > 1) ops += n;
      for (const r of runs) {
        const t0 = performance.now();
        for (const [name, cs] of changes) r.stores.get(name)!.store.write(v, cs);
        const t1 = performance.now();
        if (v > keep && v % 10 === 0) for (const s of r.stores.values()) s.store.prune(v - keep + 1);
        if (v > 1) {
          r.writeMs += t1 - t0;
          r.pruneMs += performance.now() - t1;
        }
      }
      if (v % window === 0) {
        for (const r of runs) {
          r.windows.push(`${Math.round(ops / (r.writeMs / 1000) / 1000)}k/${Math.round(ops / ((r.writeMs + r.pruneMs) / 1000) / 1000)}k`);
          r.writeMs = 0;
          r.pruneMs = 0;
        }
        ops = 0;
        process.stderr.write(`version ${v}\n`);
      }
    }
    // Gets: random live keys of each store, at the latest version and `keep` − 1 versions back.
    const probes = work.storeNames.flatMap((s) => {
      const keys = work.liveKeys(s);
      return Array.from({ length: 2000 }, (_, i) => ({ store: s, key: keys[(i * 7919) % keys.length]! }));
    });
    console.log(`mixed profile at ${scale} of its initial size, ${versions} versions, keepRecent ${keep}, page ${page}, auto_vacuum ${autoVacuum}`);
    console.log("layout | ops/s per 50 versions (writes / writes + prune) | latest get µs | get at latest − " + (keep - 1) + " µs | MiB");
    for (const r of runs) {
      const time = (version: number): number => {
        const t0 = performance.now();
        for (let rep = 0; rep < 3; rep++) for (const p of probes) r.stores.get(p.store)!.store.get(p.key, version);
        return ((performance.now() - t0) * 1000) / (probes.length * 3);
      };
      const latest = time(versions);
      const old = time(versions - keep + 1);
      for (const s of r.stores.values()) s.db.pragma("wal_checkpoint(TRUNCATE)");
      console.log(`${r.layout.name} | ${r.windows.join(", ")} | ${latest.toFixed(1)} | ${old.toFixed(1)} | ${(dirBytes(r.dir) / 2 ** 20).toFixed(0)}`);
      for (const s of r.stores.values()) s.db.close();
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
