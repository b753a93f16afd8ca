/**
 * Several named trees in one folder, committed together at one version: each store is a store folder of its own,
 * and a commit marker written after all of them says which version is whole. On open, a store found ahead of the
 * marker (a crash between store commits) is rolled back to it, so stores never disagree.
 * @module
 */
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { z } from "zod";
import { IavlError } from "../errors.js";
import { openOptionsSchema, parseOptions } from "../options.js";
import type { PruneResult } from "../prune/pruner.js";
import { Tree } from "../tree/tree.js";
import { commitInfoHash } from "./commit-info.js";

/** Options of {@link MultiTree.open}: the store names, and the options every store opens with. */
export const multiOptionsSchema = openOptionsSchema
  .extend({
    /** Names of the stores (letters, digits, `_`, `-`, `.`), at least one, no duplicates. */
    stores: z
      .array(z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, "store names are 1–64 of A–Z a–z 0–9 _ . -"))
      .min(1)
      .refine((a) => new Set(a).size === a.length, "store names must be distinct"),
    // A version is whole only when the marker is written after every store's commit is on disk.
    durability: z.enum(["normal", "full"]).default("normal"),
  })
  .strict();

/** Options of {@link MultiTree.open}. */
export type MultiTreeOptions = z.input<typeof multiOptionsSchema>;

/** What {@link MultiTree.commit} returns. */
export interface MultiCommitResult {
  version: number;
  /** Root hash of every store. */
  hashes: Map<string, Uint8Array>;
  /** The Cosmos SDK CommitInfo hash over the stores. */
  appHash: Uint8Array;
}

/** Several named IAVL trees committed together. */
export class MultiTree {
  private closed = false;
  private failed: unknown;

  private constructor(
    private readonly marker: Database.Database,
    private readonly trees: Map<string, Tree>,
    private lastVersion: number,
  ) {}

  /** Opens (or creates) the multi-store in `dir` with the given stores. */
  static open(dir: string, options: MultiTreeOptions): MultiTree {
    const o = parseOptions(multiOptionsSchema, options);
    const { stores, ...storeOptions } = o;
    mkdirSync(join(dir, "stores"), { recursive: true });
    const marker = new Database(join(dir, "commits.sqlite"));
    marker.pragma("journal_mode = WAL");
    marker.pragma(`synchronous = ${o.durability === "full" ? "FULL" : "NORMAL"}`);
    marker.exec("CREATE TABLE IF NOT EXISTS commits (version INTEGER PRIMARY KEY, app_hash BLOB NOT NULL)");
    const whole = (marker.prepare("SELECT max(version) FROM commits").pluck().get() as number | null) ?? 0;
    const trees = new Map<string, Tree>();
    try {
      for (const name of [...stores].sort()) {
        const path = join(dir, "stores", name);
        if (existsSync(join(path, "iavl.sqlite"))) {
          // A crash between store commits leaves some stores one version ahead of the marker.
          const probe = Tree.openReadOnly(path);
          const at = probe.refresh();
          probe.close();
          if (at > whole) {
            if (whole === 0) rmSync(path, { recursive: true, force: true });
            else Tree.rollback(path, whole);
          }
        }
        const tree = Tree.open(path, { ...storeOptions, initialVersion: whole + 1 });
        if (tree.version !== whole && tree.version !== 0) {
          tree.close();
          throw new IavlError("CORRUPT", `store ${name} is at version ${tree.version}, behind the multi-store's ${whole}`);
        }
        trees.set(name, tree);
      }
    } catch (e) {
      for (const t of trees.values()) t.close();
      marker.close();
      throw e;
    }
    return new MultiTree(marker, trees, whole);
  }

  /** The store `name`. */
  tree(name: string): Tree {
    this.open();
    const t = this.trees.get(name);
    if (t === undefined) throw new IavlError("INVALID_ARGUMENT", `no store named ${name} (stores: ${[...this.trees.keys()].join(", ")})`);
    return t;
  }

  /** Names of the stores, sorted. */
  get names(): string[] {
    return [...this.trees.keys()];
  }

  /** The last version committed by every store. */
  get version(): number {
    this.open();
    return this.lastVersion;
  }

  /** The app hash of the last committed version (computed from the stores' hashes). */
  get appHash(): Uint8Array {
    this.open();
    return commitInfoHash(new Map([...this.trees].map(([n, t]) => [n, t.hash])));
  }

  /** Commits every store at the next version; the version is whole once this returns. */
  commit(): MultiCommitResult {
    this.open();
    const version = this.lastVersion + 1;
    const hashes = new Map<string, Uint8Array>();
    try {
      for (const [name, t] of this.trees) {
        const c = t.commit();
        if (c.version !== version) throw new IavlError("CORRUPT", `store ${name} committed version ${c.version}, expected ${version}`);
        hashes.set(name, c.hash);
      }
    } catch (e) {
      // Some stores may be ahead now: refuse further work; reopening rolls them back.
      this.failed = e;
      throw e;
    }
    const appHash = commitInfoHash(hashes);
    this.marker.prepare("INSERT INTO commits (version, app_hash) VALUES (?, ?)").run(version, appHash);
    this.lastVersion = version;
    return { version, hashes, appHash };
  }

  /** The app hash recorded for committed `version`. */
  appHashAt(version: number): Uint8Array {
    this.open();
    const h = this.marker.prepare("SELECT app_hash FROM commits WHERE version = ?").pluck().get(version) as Uint8Array | undefined;
    if (h === undefined) throw new IavlError("VERSION_NOT_FOUND", `version ${version} was never committed by this multi-store`);
    return new Uint8Array(h);
  }

  /** Prunes every store up to `version`. */
  async prune(version: number): Promise<Map<string, PruneResult>> {
    this.open();
    const out = new Map<string, PruneResult>();
    for (const [name, t] of this.trees) out.set(name, await t.prune(version));
    this.marker.prepare("DELETE FROM commits WHERE version <= ? AND version < ?").run(version, this.lastVersion);
    return out;
  }

  /** Closes every store. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.trees.values()) t.close();
    this.marker.close();
  }

  private open(): void {
    if (this.closed) throw new IavlError("CLOSED", "the multi-store is closed");
    if (this.failed !== undefined) {
      throw new IavlError("CORRUPT", `a commit failed part-way (${(this.failed as Error).message}); reopen to continue from the last whole version`);
    }
  }
}
