/**
 * The state-sync section: a 1,000,000-key BANK tree (quick: 100,000), built by commits (timed): the persistent
 * section's grown store when that section ran in the same process (saving ~5 minutes), otherwise built here in
 * versions of ~10,000 changes. Then
 *
 * - export of its latest version from a freshly reopened store (nodes/s), against iterating as many rows with a raw
 *   SELECT over the store's own tables, and against the 200,000 nodes/s target;
 * - `Tree.import` of that export (held in memory, so that the export's cost is not in it) into a new folder, against
 *   the floor "hash every node (hash.ts leafHash/innerHash over the value's sha256, bottom-up as an importer must)
 *   + insert the same rows (log, kv, branch with the store's schema) into a fresh SQLite file in one long
 *   transaction", the two measured separately and summed;
 * - import time against the time the commits that built the tree took.
 * @module
 */
import { dirname, join } from "node:path";
import Database from "better-sqlite3";
import { Tree, type ExportNode } from "../src/index.js";
import { equalBytes } from "../src/base/bytes.js";
import { innerHash, leafHash, sha256 } from "../src/base/hash.js";
import { LEAF_BASE } from "../src/sqlite/shards.js";
import { consume, maybeGc, timeNs, type Report } from "./report.js";
import { applyToTree, dirBytes, mib, removeDir, scratchDir, takeGrown } from "./stores.js";
import { BANK, growTo } from "./workload.js";

const SECTION = "state-sync";
const SEED = 41;

/** Options of {@link runStateSync}. */
export interface StateSyncOptions {
  quick: boolean;
}

export async function runStateSync(report: Report, opts: StateSyncOptions): Promise<void> {
  const root = scratchDir(SECTION);
  try {
    await run(report, root, opts.quick);
  } finally {
    removeDir(root);
  }
}

async function run(report: Report, root: string, quick: boolean): Promise<void> {
  const target = quick ? 100_000 : 1_000_000;
  // Versions of ~10,000 changes: 750 updates + 250 deletes + 250 re-creates + the growth.
  const growth = quick ? 1_800 : 9_000;
  // The persistent section's grown BANK store, when it ran in this process; otherwise a tree built here.
  const shared = takeGrown(target);
  const srcDir = shared?.dir ?? join(root, "source");
  let buildNs = shared?.buildNs ?? 0;
  let buildOps = shared?.ops ?? 0;
  let buildVersions = shared?.versions ?? 0;
  if (shared !== undefined) {
    report.log(`[${SECTION}] exporting the persistent section's ${target.toLocaleString("en-US")}-key store`);
  } else {
    report.log(`[${SECTION}] building ${target.toLocaleString("en-US")} keys by commits (+${growth.toLocaleString("en-US")} keys a version)`);
    const t = Tree.open(srcDir);
    let first = true;
    for (const batch of growTo(BANK, target, SEED, { changesPerVersion: 1_000, growthPerVersion: growth })) {
      const ns = timeNs(() => {
        applyToTree(t, batch);
        t.commit();
      });
      // As the persistent section counts it: the initial load (version 1) is not history being replayed.
      if (!first) {
        buildNs += ns;
        buildOps += batch.length;
        buildVersions++;
      }
      first = false;
      if (buildVersions % 20 === 0) report.log(`[${SECTION}]   v${t.version}: ${t.size.toLocaleString("en-US")} keys, ${(buildNs / 1e9).toFixed(0)} s`);
    }
    if (t.size !== target) throw new Error(`bench: built ${t.size} keys, expected ${target}`);
    t.close();
  }

  // --- export -------------------------------------------------------------------------------------------------------
  maybeGc();
  const tree = Tree.open(srcDir);
  const version = tree.version;
  const hash = tree.hash;
  let nodes = 0;
  let leaves = 0;
  const exportNs = timeNs(() => {
    let sink = 0;
    for (const n of tree.at(version).export()) {
      nodes++;
      if (n.height === 0) leaves++;
      sink ^= n.key.length;
    }
    consume(sink);
  });
  if (leaves !== target || nodes !== 2 * target - 1) throw new Error(`bench: export gave ${nodes} nodes, ${leaves} leaves`);
  report.log(`[${SECTION}] export: ${nodes.toLocaleString("en-US")} nodes in ${(exportNs / 1e9).toFixed(1)} s`);

  // Floor: as many rows read by a raw SELECT from the same file (kv rows, then log and branch rows), on a fresh connection.
  const file = join(srcDir, "iavl.sqlite");
  const selectNs = timeNs(() => {
    const db = new Database(file, { readonly: true });
    db.pragma("cache_size = -65536");
    db.pragma("mmap_size = 268435456");
    let n = 0;
    let sink = 0;
    const nodeTables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND (name LIKE 'log%' OR name LIKE 'branch%') ORDER BY name").pluck().all() as string[];
    const tables = ["kv", ...nodeTables];
    // Round the tables again if they hold fewer rows than the tree has nodes.
    for (let round = 0; n < nodes && round < 10; round++) {
      for (const t of tables) {
        for (const row of db.prepare(`SELECT * FROM ${t}`).raw().iterate() as IterableIterator<unknown[]>) {
          sink ^= (row[2] as Uint8Array | number | null) === null ? 0 : 1;
          if (++n >= nodes) break;
        }
        if (n >= nodes) break;
      }
    }
    db.close();
    consume(sink);
    if (n < nodes) throw new Error(`bench: the store has only ${n} rows to iterate`);
  });

  // The stream to import, held in memory (not timed).
  const stream: ExportNode[] = [];
  for (const n of tree.at(version).export()) stream.push(n);
  tree.close();
  const srcBytes = dirBytes(srcDir);
  removeDir(shared !== undefined ? dirname(srcDir) : srcDir);

  // --- import -------------------------------------------------------------------------------------------------------
  maybeGc();
  report.log(`[${SECTION}] import of ${nodes.toLocaleString("en-US")} nodes`);
  const dst = join(root, "imported");
  const t0 = process.hrtime.bigint();
  const imported = await Tree.import(dst, stream, { version, expectedHash: hash });
  const importNs = Number(process.hrtime.bigint() - t0);
  const matches = equalBytes(imported.hash, hash) && imported.size === target;
  imported.close();
  if (!matches) throw new Error("bench: the import does not match");
  const dstBytes = dirBytes(dst);
  removeDir(dst);

  // Floor, part 1: hash every node bottom-up, as any importer must.
  maybeGc();
  report.log(`[${SECTION}] floor: hashing and inserting the same nodes`);
  const hashes: Uint8Array[] = new Array<Uint8Array>(stream.length);
  const sizes: number[] = new Array<number>(stream.length);
  const hashNs = timeNs(() => {
    const stack: number[] = [];
    for (let i = 0; i < stream.length; i++) {
      const n = stream[i]!;
      if (n.height === 0) {
        hashes[i] = leafHash(n.key, sha256(n.value!), n.version);
        sizes[i] = 1;
      } else {
        const r = stack.pop()!;
        const l = stack.pop()!;
        sizes[i] = sizes[l]! + sizes[r]!;
        hashes[i] = innerHash(n.height, sizes[i]!, n.version, hashes[l]!, hashes[r]!);
      }
      stack.push(i);
    }
  });
  if (!equalBytes(hashes[stream.length - 1]!, hash)) throw new Error("bench: the floor's hashing does not reach the root hash");

  // Floor, part 2: the same rows into a fresh file with the store's schema and settings, one long transaction.
  const floorFile = join(root, "floor.sqlite");
  const insertNs = timeNs(() => {
    const db = new Database(floorFile);
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    db.pragma("cache_size = -65536");
    db.pragma("temp_store = MEMORY");
    db.pragma("mmap_size = 268435456");
    db.exec(`
      CREATE TABLE kv (key BLOB NOT NULL, version INTEGER NOT NULL, value BLOB, PRIMARY KEY (key, version)) WITHOUT ROWID;
      CREATE TABLE log (version INTEGER NOT NULL, seq INTEGER NOT NULL, key BLOB NOT NULL, kind INTEGER NOT NULL, hash BLOB,
        PRIMARY KEY (version, seq)) WITHOUT ROWID;
      CREATE TABLE branch (version INTEGER NOT NULL, seq INTEGER NOT NULL, key BLOB NOT NULL, height INTEGER NOT NULL,
        size INTEGER NOT NULL, hash BLOB NOT NULL, left_version INTEGER NOT NULL, left_seq INTEGER NOT NULL,
        right_version INTEGER NOT NULL, right_seq INTEGER NOT NULL, PRIMARY KEY (version, seq)) WITHOUT ROWID;
    `);
    const kvIns = db.prepare("INSERT INTO kv (key, version, value) VALUES (?, ?, ?)");
    const logIns = db.prepare("INSERT INTO log (version, seq, key, kind, hash) VALUES (?, ?, ?, 1, ?)");
    const brIns = db.prepare(
      "INSERT INTO branch (version, seq, key, height, size, hash, left_version, left_seq, right_version, right_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    );
    const leafSeq = new Map<number, number>();
    const branchSeq = new Map<number, number>();
    const seqs: number[] = new Array<number>(stream.length);
    const stack: number[] = [];
    db.exec("BEGIN IMMEDIATE");
    for (let i = 0; i < stream.length; i++) {
      const n = stream[i]!;
      if (n.height === 0) {
        const s = (leafSeq.get(n.version) ?? LEAF_BASE) + 1;
        leafSeq.set(n.version, s);
        seqs[i] = s;
        logIns.run(n.version, s, n.key, hashes[i]!);
        kvIns.run(n.key, n.version, n.value!);
      } else {
        const s = (branchSeq.get(n.version) ?? 0) + 1;
        branchSeq.set(n.version, s);
        seqs[i] = s;
        const r = stack.pop()!;
        const l = stack.pop()!;
        brIns.run(n.version, s, n.key, n.height, sizes[i]!, hashes[i]!, stream[l]!.version, seqs[l]!, stream[r]!.version, seqs[r]!);
      }
      stack.push(i);
    }
    db.exec("COMMIT");
    db.close();
  });
  const floorBytes = dirBytes(floorFile);
  removeDir(floorFile);

  report.add({
    section: SECTION,
    name: `export of a ${target.toLocaleString("en-US")}-key tree (${nodes.toLocaleString("en-US")} nodes), reopened store`,
    value: nodes / (exportNs / 1e9),
    unit: "nodes/s",
    floorName: "200,000 nodes/s (SPEC target)",
    floorValue: 200_000,
    target: 1,
    note: `${(exportNs / 1e9).toFixed(1)} s; the store holds ${mib(srcBytes)} (all ${version} versions)`,
  });
  report.add({
    section: SECTION,
    name: "  export, against iterating as many rows",
    value: nodes / (exportNs / 1e9),
    unit: "nodes/s",
    floorName: `raw SELECT * iterating ${nodes.toLocaleString("en-US")} rows (kv, then log and branch tables) of the same file`,
    floorValue: nodes / (selectNs / 1e9),
  });
  report.add({
    section: SECTION,
    name: `import via Tree.import (${nodes.toLocaleString("en-US")} nodes, stream in memory)`,
    value: nodes / (importNs / 1e9),
    unit: "nodes/s",
    floorName: "hash every node + insert the same rows in 1 tx (summed)",
    floorValue: nodes / ((hashNs + insertNs) / 1e9),
    target: 1.67,
    note: `target: ≥ 0.6× the floor; import ${(importNs / 1e9).toFixed(1)} s; floor hashing ${(hashNs / 1e9).toFixed(1)} s + inserting ${(insertNs / 1e9).toFixed(1)} s; imported store ${mib(dstBytes)}, floor file ${mib(floorBytes)}`,
  });
  report.add({
    section: SECTION,
    name: "import time vs building the same tree by commits",
    value: importNs / 1e9,
    unit: "s",
    floorName: `${buildVersions} commits, ${buildOps.toLocaleString("en-US")} changes (set/remove + commit), the initial load excluded`,
    floorValue: buildNs / 1e9,
    note: "context: how much faster a node joins by state sync than by replaying the history",
  });
}
