/**
 * The replica's own store, plain or multi: it applies a version of the source's feed, and commits it only when every
 * store's root hash equals the source's for that version.
 * @module
 */
import { equalBytes, toHex } from "../base/bytes.js";
import { IavlError } from "../base/errors.js";
import type { FeedVersion } from "../sync/ops-wire.js";
import { MultiTree } from "../api/multi-tree.js";
import type { OpenOptions } from "../api/options.js";
import { Tree } from "../api/tree.js";

/** The options of a replica's stores: what may differ from the source's without changing a hash. */
export type ReplicaStoreOptions = Pick<OpenOptions, "keepRecent" | "keepEvery" | "memoryBudgetMiB" | "checkpointInterval">;

/** A replica's store folder, opened for writing. */
export class LocalReplica {
  private constructor(
    private readonly plain: Tree | undefined,
    private readonly multi: MultiTree | undefined,
  ) {}

  /**
   * Opens (creating when missing) the replica in `dir`: a plain store when `stores` is undefined, else a multi-store of
   * the source's `stores` (the source's list, not a person's: a store the source added is added here too).
   */
  static open(dir: string, stores: string[] | undefined, options: ReplicaStoreOptions): LocalReplica {
    if (stores === undefined) return new LocalReplica(Tree.open(dir, options), undefined);
    return new LocalReplica(undefined, MultiTree.open(dir, { ...options, stores, addStores: stores }));
  }

  /** The last version committed here (0: none). */
  get version(): number {
    return this.plain?.version ?? this.multi!.version;
  }

  /**
   * Throws `CORRUPT` unless the last version committed here has the source's `hashes` for it: each store's root hash
   * by name, and the app hash.
   */
  check(hashes: ReadonlyMap<string, VersionHashes>): void {
    for (const [name, h] of hashes) this.same(this.version, `the root hash of ${name}`, this.tree(name).hash, h.hash);
    if (this.multi !== undefined) this.same(this.version, "the app hash", this.multi.appHash, firstOf(hashes)?.appHash);
  }

  /**
   * Applies each store's operations of one version, checks every store's new root hash against the source's, and
   * commits. On a mismatch nothing is committed and `CORRUPT` is thrown: the replica stays at its last good version.
   */
  apply(frames: ReadonlyMap<string, FeedVersion>): void {
    for (const [name, f] of frames) {
      const t = this.tree(name);
      for (const op of f.ops) {
        if (op.value === null) t.remove(op.key);
        else t.set(op.key, op.value);
      }
      this.same(f.version, `the root hash of ${name}`, t.workingHash(), f.hash);
    }
    if (this.plain !== undefined) {
      this.plain.commit();
      return;
    }
    const done = this.multi!.commit();
    this.same(done.version, "the app hash", done.appHash, firstOf(frames)?.appHash);
  }

  close(): void {
    this.plain?.close();
    this.multi?.close();
  }

  private tree(name: string): Tree {
    return this.plain ?? this.multi!.tree(name);
  }

  /** Throws `CORRUPT` unless `mine` is `theirs` (when the source gave one). */
  private same(version: number, what: string, mine: Uint8Array, theirs: Uint8Array | null | undefined): void {
    if (theirs != null && !equalBytes(mine, theirs)) {
      throw new IavlError("CORRUPT", `at version ${version} ${what} here is ${toHex(mine)} and the source's is ${toHex(theirs)}: the replica stopped at its last good version`);
    }
  }
}

/** The hashes of a version at the source: a store's root hash, and the app hash (null for a plain store). */
export interface VersionHashes {
  hash: Uint8Array;
  appHash: Uint8Array | null;
}

const firstOf = <T>(m: ReadonlyMap<string, T>): T | undefined => m.values().next().value;
