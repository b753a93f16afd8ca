import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { decodePage, type DecodedPage } from "../src/sqlite/page-codec.js";
import { IavlError } from "../src/base/errors.js";
import { fromHex, utf8 } from "../src/base/bytes.js";

const here = fileURLToPath(new URL(".", import.meta.url));

/**
 * `read` run on a read-only connection of its own to the store file in `dir`, closed after: what a test checks in the
 * file beside (or after) its writer.
 */
export function inStoreFile<T>(dir: string, read: (db: Database.Database) => T): T {
  const db = new Database(join(dir, "iavl.sqlite"), { readonly: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}

/** One version of `treehash_ops.jsonl`. */
export interface OpsVersion {
  version: number;
  ops: Array<["s", Uint8Array, Uint8Array] | ["d", Uint8Array]>;
  expectHash: string;
  sizeAfter: number;
}

/** The versions of cosmos/iavl `TestTreeHash`. */
export function treehashOps(): OpsVersion[] {
  return readFileSync(`${here}vectors/treehash_ops.jsonl`, "utf8")
    .trim()
    .split("\n")
    .map((line) => {
      const j = JSON.parse(line) as { version: number; ops: string[][]; expectHash: string; sizeAfter: number };
      return {
        version: j.version,
        expectHash: j.expectHash,
        sizeAfter: j.sizeAfter,
        ops: j.ops.map((op) =>
          op[0] === "s" ? (["s", fromHex(op[1]!), fromHex(op[2]!)] as const) : (["d", fromHex(op[1]!)] as const),
        ) as OpsVersion["ops"],
      };
    });
}

/** A golden case: named versions of UTF-8 ops with the expected root hash. */
export interface GoldenCase {
  name: string;
  versions: Array<{ version: number; ops: Array<[string, string, string?]>; rootHash: string }>;
}

export function goldenCases(): GoldenCase[] {
  return JSON.parse(readFileSync(`${here}vectors/golden_simple.json`, "utf8")) as GoldenCase[];
}

export function readVector<T>(name: string): T {
  return JSON.parse(readFileSync(`${here}vectors/${name}`, "utf8")) as T;
}

export const b = utf8;
export const hex = fromHex;

/** A small deterministic PRNG (mulberry32): seeded tests reproduce their failures. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Milliseconds of CPU this process has used (user and system, all its threads): a bound on how long some work may
 * take, measured so that other processes on a busy machine do not count, as they do on the wall clock.
 */
export function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/** `n` bytes from `next`. */
export function randomBytes(next: () => number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(next() * 256);
  return out;
}

/** The code of the IavlError `fn` throws, undefined when it throws nothing; other errors propagate. */
export function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof IavlError) return e.code;
    throw e;
  }
  return undefined;
}

/** Which stored node {@link corruptStoredNodeHash} damages. */
export type StoredNodeKind = "branch" | "leaf" | "root";

/**
 * Zeroes the stored hash of ONE node row of the latest version's tree in the store `dir` (which no one may hold
 * open), behind the library's back: `"root"` its root, `"branch"` an inner node that is not the root (the lowest
 * one on the leftmost path), `"leaf"` a leaf (the leftmost). The latest version must be a checkpoint (so that its
 * branches are stored) of at least 3 keys. Returns the damaged node's (version, seq).
 *
 * This is the only place in the tests that knows the storage layout (layout 3: the spine in `branch_<shard>` /
 * `branch_c<gen>` tables with a `hash` column, children named by (version, seq), a leaf child by (version, 2^31 + its
 * `leaves` row id), the root by `versions.root_version/root_seq`; the subtrees of at most 16 leaves in `pages` rows,
 * decoded by src/sqlite/page-codec.ts): when the layout changes, change it here.
 */
export function corruptStoredNodeHash(dir: string, which: StoredNodeKind): { version: number; seq: number } {
  const db = new Database(join(dir, "iavl.sqlite"));
  try {
    const latest = db
      .prepare("SELECT root_version AS version, root_seq AS seq FROM versions ORDER BY version DESC LIMIT 1")
      .get() as { version: number | null; seq: number | null } | undefined;
    if (latest?.version == null || latest.seq == null) throw new Error(`${dir}: the latest version is not a stored checkpoint`);
    const tables = (prefix: string): string[] =>
      db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB ? ORDER BY name").pluck().all(`${prefix}_*`) as string[];
    /** The table holding branch (version, seq). */
    const home = (kind: "branch", version: number, seq: number): string => {
      for (const t of tables(kind)) if (db.prepare(`SELECT 1 FROM ${t} WHERE version = ? AND seq = ?`).get(version, seq) !== undefined) return t;
      throw new Error(`${dir}: no ${kind} row (${version}, ${seq})`);
    };
    const zero = (kind: "branch" | "leaf", version: number, seq: number): { version: number; seq: number } => {
      if (kind === "leaf") db.prepare("UPDATE leaves SET hash = zeroblob(length(hash)) WHERE id = ? AND version = ?").run(seq - 2 ** 31, version);
      else db.prepare(`UPDATE ${home(kind, version, seq)} SET hash = zeroblob(length(hash)) WHERE version = ? AND seq = ?`).run(version, seq);
      return { version, seq };
    };
    // Layout 3: a page row holds a subtree; a node of it is named 2^50 + page id · 32 + slot (slot 0: its root).
    const PAGE_BASE = 2 ** 50;
    const zeroInPage = (seq: number, at: (p: DecodedPage) => number): { version: number; seq: number } => {
      const id = Math.floor((seq - PAGE_BASE) / 32);
      const bytes = new Uint8Array(db.prepare("SELECT bytes FROM pages WHERE id = ?").pluck().get(id) as Uint8Array);
      const p = decodePage(bytes, `page ${id}`);
      const i = at(p);
      bytes.fill(0, p.hashAt[i]!, p.hashAt[i]! + 32);
      db.prepare("UPDATE pages SET bytes = ? WHERE id = ?").run(bytes, id);
      return { version: p.version[i]!, seq: PAGE_BASE + id * 32 + (p.count - 1 - i) };
    };
    if (which === "root") return latest.seq >= PAGE_BASE ? zeroInPage(latest.seq, (p) => p.count - 1) : zero("branch", latest.version, latest.seq);
    // Down the leftmost path to the inner node of height 1, whose left child is a leaf.
    let node = { version: latest.version, seq: latest.seq };
    while (node.seq < PAGE_BASE) {
      const row = db
        .prepare(`SELECT height, left_version AS lv, left_seq AS ls FROM ${home("branch", node.version, node.seq)} WHERE version = ? AND seq = ?`)
        .get(node.version, node.seq) as { height: number; lv: number; ls: number };
      if (row.height === 1) break;
      node = { version: row.lv, seq: row.ls };
    }
    if (node.seq >= PAGE_BASE) {
      // In a page, the leftmost leaf is node 0 and the branch of height 1 above it the one whose left child it is.
      const bottom = (p: DecodedPage): number => p.left.indexOf(0);
      if (which === "branch") {
        if (node.version === latest.version && node.seq === latest.seq && latest.seq >= PAGE_BASE) {
          const id = Math.floor((node.seq - PAGE_BASE) / 32);
          const p = decodePage(new Uint8Array(db.prepare("SELECT bytes FROM pages WHERE id = ?").pluck().get(id) as Uint8Array), "page");
          if (bottom(p) === p.count - 1) throw new Error(`${dir}: the tree has no inner node but its root`);
        }
        return zeroInPage(node.seq, bottom);
      }
      const id = Math.floor((node.seq - PAGE_BASE) / 32);
      const p = decodePage(new Uint8Array(db.prepare("SELECT bytes FROM pages WHERE id = ?").pluck().get(id) as Uint8Array), "page");
      return zero("leaf", p.version[0]!, 2 ** 31 + p.leafId[0]!);
    }
    if (which === "branch") {
      if (node.version === latest.version && node.seq === latest.seq) throw new Error(`${dir}: the tree has no inner node but its root`);
      return zero("branch", node.version, node.seq);
    }
    const leaf = db
      .prepare(`SELECT left_version AS version, left_seq AS seq FROM ${home("branch", node.version, node.seq)} WHERE version = ? AND seq = ?`)
      .get(node.version, node.seq) as { version: number; seq: number };
    return zero("leaf", leaf.version, leaf.seq);
  } finally {
    db.close();
  }
}

/**
 * The branch rows of a closed store, and those its kept checkpoints' trees reach (the replay base's, every checkpoint
 * version's): a branch row goes once no kept tree holds it, so after a prune the two are the same set. A reached
 * branch that is not stored fails the calling test. Knows the layout as {@link corruptStoredNodeHash} does.
 */
export function branchRows(dir: string): { stored: Set<string>; reached: Set<string> } {
  return inStoreFile(dir, (db) => {
    const links = new Map<string, number[]>();
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'branch\\_%' ESCAPE '\\'").pluck().all() as string[];
    for (const t of tables) {
      for (const r of db.prepare(`SELECT version, seq, left_version, left_seq, right_version, right_seq FROM ${t}`).raw().all() as number[][]) {
        links.set(`${r[0]}/${r[1]}`, r.slice(2));
      }
    }
    // Layout 3: a page row is one stored unit, named p<id>; a link names it as 2^50 + id · 32 + slot.
    const pages = new Set((db.prepare("SELECT id FROM pages").pluck().all() as number[]).map((id) => `p${id}`));
    const PAGE_BASE = 2 ** 50;
    const meta = (name: string): number | null => (db.prepare("SELECT value FROM meta WHERE name = ?").pluck().get(name) as number | undefined) ?? null;
    const roots: Array<[number | null, number | null]> = db.prepare("SELECT root_version, root_seq FROM versions WHERE checkpoint = 1").raw().all() as Array<[number, number]>;
    roots.push([meta("base_root_version"), meta("base_root_seq")]);
    const reached = new Set<string>();
    const stack = roots.filter(([v, s]) => v !== null && s !== null && (s < 2 ** 31 || s >= PAGE_BASE)) as Array<[number, number]>;
    while (stack.length > 0) {
      const [v, s] = stack.pop()!;
      if (s >= PAGE_BASE) {
        const id = `p${Math.floor((s - PAGE_BASE) / 32)}`;
        if (!pages.has(id)) throw new Error(`page ${id}, which a kept tree holds, is not stored`);
        reached.add(id);
        continue;
      }
      const id = `${v}/${s}`;
      if (reached.has(id)) continue;
      reached.add(id);
      const l = links.get(id);
      if (l === undefined) throw new Error(`branch ${id}, which a kept tree holds, is not stored`);
      if (l[1]! < 2 ** 31 || l[1]! >= PAGE_BASE) stack.push([l[0]!, l[1]!]);
      if (l[3]! < 2 ** 31 || l[3]! >= PAGE_BASE) stack.push([l[2]!, l[3]!]);
    }
    return { stored: new Set([...links.keys(), ...pages]), reached };
  });
}

/**
 * What is wrong with the branch rows of a closed store whose prunes are all finished, or undefined: a branch a kept
 * tree holds that is not stored, or stored rows that no kept tree holds (the simulator's end-of-life check).
 */
export function branchRowsProblem(dir: string): string | undefined {
  let rows: ReturnType<typeof branchRows>;
  try {
    rows = branchRows(dir);
  } catch (e) {
    return (e as Error).message;
  }
  const left = [...rows.stored].filter((id) => !rows.reached.has(id));
  return left.length === 0 ? undefined : `${left.length} branch row(s) that no kept tree holds are stored after a prune, e.g. ${left.slice(0, 3).join(", ")}`;
}

/**
 * What is wrong with the leaves rows of a closed store whose prunes are all finished and that keeps no snapshots (no
 * `keepEvery`), or undefined. Kept versions read, at or before the version replays start from (the base), only each
 * key's newest row: an older one there is dead, and so is a removal row of a pruned version with nothing under it to
 * hide. Knows the layout as {@link corruptStoredNodeHash} does.
 */
export function leafRowsProblem(dir: string): string | undefined {
  return inStoreFile(dir, (db) => {
    const meta = (name: string): number => (db.prepare("SELECT value FROM meta WHERE name = ?").pluck().get(name) as number | undefined) ?? 0;
    const [base, prunedTo] = [meta("base_version"), meta("pruned_to")];
    const extra = db.prepare("SELECT count(*) FROM leaves WHERE version <= ? GROUP BY key HAVING count(*) > 1").pluck().all(base) as number[];
    if (extra.length > 0) return `${extra.length} key(s) with more than one row at or before the base (version ${base}) after a prune`;
    const removals = db.prepare("SELECT count(*) FROM leaves WHERE version <= ? AND version <= ? AND hash IS NULL").pluck().get(base, prunedTo) as number;
    return removals === 0 ? undefined : `${removals} removal row(s) of pruned versions at or before the base (version ${base}) after a prune`;
  });
}
