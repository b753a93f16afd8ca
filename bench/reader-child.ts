/**
 * A reader process of the readers bench: `node --import tsx bench/reader-child.ts <dir> <seed>`.
 *
 * Opens every store in `<dir>` with `Tree.openReadOnly` and reads in a loop: `at(v).get(key)` of random facts from
 * `<dir>/facts.jsonl`, which the writer appends after each commit. A fact is `{s, k, v, h}`: in store `s`, key `k`
 * (hex) has at version `v` the value whose sha256 is `h` (hex), or is absent (`h` null). Facts are the writer's last
 * change of a key in a version, so every read can be checked exactly; reads are timed without the check.
 *
 * One batch in ten is read instead with a raw prepared `SELECT value FROM kv WHERE key = ? AND version <= ? ORDER BY
 * version DESC LIMIT 1` on a read-only connection of the same file: the floor of the reads/s figure.
 *
 * Prints `ready` once open, and at the end one JSON line of counts. Stops when `<dir>/stop` appears, or after
 * 30 minutes, or when its parent is gone.
 * @module
 */
import { createHash } from "node:crypto";
import { closeSync, existsSync, fstatSync, openSync, readSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { Tree, type ReadOnlyStore } from "../src/index.js";
import { Rng } from "./workload.js";

/** One checkable read; see the module header. */
export interface Fact {
  s: string;
  k: string;
  v: number;
  h: string | null;
}

/** What a reader prints at the end. */
export interface ReaderResult {
  reads: number;
  treeMs: number;
  rawReads: number;
  rawMs: number;
  mismatches: number;
  errors: number;
  firstError?: string;
}

const STORES = ["bank", "lockup", "staking"];
const BATCH = 100;
const MAX_MS = 30 * 60 * 1000;

function main(): void {
  const dir = process.argv[2];
  const seed = Number(process.argv[3] ?? "1");
  if (dir === undefined) throw new Error("usage: reader-child.ts <dir> <seed>");
  const parent = process.ppid;
  const stores = new Map<string, ReadOnlyStore>();
  const raws = new Map<string, { db: Database.Database; stmt: Database.Statement }>();
  for (const s of STORES) {
    stores.set(s, Tree.openReadOnly(join(dir, s)));
    const db = new Database(join(dir, s, "iavl.sqlite"), { readonly: true });
    db.pragma("cache_size = -65536");
    db.pragma("mmap_size = 268435456");
    raws.set(s, { db, stmt: db.prepare("SELECT value FROM kv WHERE key = ? AND version <= ? ORDER BY version DESC LIMIT 1").pluck() });
  }

  // Facts, read incrementally as the writer appends them.
  const facts: Array<{ store: string; key: Uint8Array; v: number; h: string | null }> = [];
  const factsFile = join(dir, "facts.jsonl");
  const fd = openSync(factsFile, "r");
  let pos = 0;
  let tail = "";
  const loadFacts = (): void => {
    const size = fstatSync(fd).size;
    if (size <= pos) return;
    const buf = Buffer.alloc(size - pos);
    const n = readSync(fd, buf, 0, buf.length, pos);
    pos += n;
    const text = tail + buf.subarray(0, n).toString("utf8");
    const lines = text.split("\n");
    tail = lines.pop() ?? "";
    for (const line of lines) {
      if (line === "") continue;
      for (const f of JSON.parse(line) as Fact[]) facts.push({ store: f.s, key: Buffer.from(f.k, "hex"), v: f.v, h: f.h });
    }
  };
  loadFacts();
  if (facts.length === 0) throw new Error("reader: no facts to read");
  process.stdout.write("ready\n");

  const rng = new Rng(seed);
  const r: ReaderResult = { reads: 0, treeMs: 0, rawReads: 0, rawMs: 0, mismatches: 0, errors: 0 };
  const stop = join(dir, "stop");
  const t0 = performance.now();
  const picked: Array<(typeof facts)[number]> = new Array(BATCH);
  const got: Array<Uint8Array | undefined> = new Array(BATCH);
  for (let batch = 0; ; batch++) {
    if (batch % 8 === 0) {
      if (existsSync(stop) || performance.now() - t0 > MAX_MS || process.ppid !== parent) break;
      loadFacts();
    }
    for (let i = 0; i < BATCH; i++) picked[i] = facts[rng.int(facts.length)]!;
    const raw = batch % 10 === 9;
    const a = performance.now();
    for (let i = 0; i < BATCH; i++) {
      const f = picked[i]!;
      try {
        got[i] = raw ? (raws.get(f.store)!.stmt.get(f.key, f.v) as Uint8Array | null | undefined) ?? undefined : stores.get(f.store)!.at(f.v).get(f.key);
      } catch (e) {
        r.errors++;
        r.firstError ??= e instanceof Error ? e.message : String(e);
        got[i] = undefined;
      }
    }
    const ms = performance.now() - a;
    if (raw) {
      r.rawMs += ms;
      r.rawReads += BATCH;
    } else {
      r.treeMs += ms;
      r.reads += BATCH;
    }
    for (let i = 0; i < BATCH; i++) {
      const f = picked[i]!;
      const v = got[i];
      const ok = f.h === null ? v === undefined : v !== undefined && createHash("sha256").update(v).digest("hex") === f.h;
      if (!ok) r.mismatches++;
    }
  }
  closeSync(fd);
  for (const s of stores.values()) s.close();
  for (const { db } of raws.values()) db.close();
  process.stdout.write(`${JSON.stringify(r)}\n`);
}

main();
