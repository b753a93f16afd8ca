/**
 * The replica's own store, plain or multi: it applies versions of the source's feed, many to one transaction, and
 * commits each only when every store's root hash (and the app hash) equals the source's for that version.
 * @module
 */
import { equalBytes, toHex } from "../base/bytes.js";
import { IavlError, isIavlError } from "../base/errors.js";
import type { FeedVersion } from "../sync/ops-wire.js";
import { commitInfoHash } from "../api/commit-info.js";
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

  /** The last version a reopen of the replica in `dir` goes on from (its stores `multi` or one plain store). */
  static onDisk(dir: string, multi: boolean): number {
    if (!multi) {
      const r = Tree.openReadOnly(dir);
      try {
        return r.version;
      } finally {
        r.close();
      }
    }
    const r = MultiTree.openReadOnly(dir);
    try {
      return r.latest;
    } finally {
      r.close();
    }
  }

  /** True for a multi-store replica. */
  get isMulti(): boolean {
    return this.multi !== undefined;
  }

  /** The last version committed here (0: none). */
  get version(): number {
    return this.plain?.version ?? this.multi!.version;
  }

  /** What identifies a version here and at the source: a multi-store's app hash, a plain store's root hash. */
  get hashName(): string {
    return this.plain === undefined ? "app hash" : "root hash";
  }

  /** The versions this replica holds, oldest first. */
  versions(): number[] {
    return this.plain?.versions() ?? this.multi!.tree(this.multi!.names[0]!).versions();
  }

  /** The {@link hashName} of `version` here, or undefined when this replica does not hold it. */
  hashAt(version: number): Uint8Array | undefined {
    try {
      return this.plain?.at(version).hash ?? this.multi!.appHashAt(version);
    } catch (e) {
      if (isIavlError(e, "VERSION_PRUNED") || isIavlError(e, "VERSION_NOT_FOUND")) return undefined;
      throw e;
    }
  }

  /**
   * Applies `versions` (each the next one, every store's frames by name) in one group of commits (`Tree.group`), so
   * that they land in one transaction. Each version's operations go into every store, each store's working hash is
   * checked against the source's, then the app hash, and only then is the version committed: on a mismatch nothing of
   * that version is committed, the versions before it land, and `CORRUPT` is thrown.
   */
  applyAll(versions: ReadonlyArray<ReadonlyMap<string, FeedVersion>>): void {
    const run = (): void => {
      for (const frames of versions) this.apply(frames);
    };
    if (this.plain !== undefined) this.plain.group(run);
    else this.multi!.group(run);
  }

  close(): void {
    this.plain?.close();
    this.multi?.close();
  }

  private apply(frames: ReadonlyMap<string, FeedVersion>): void {
    const next = this.version + 1;
    const got = [...frames.values()].map((f) => f.version);
    if (got.some((v) => v !== next)) throw new IavlError("SOURCE_UNAVAILABLE", `the source answered version(s) ${got.join(", ")} where ${next} was asked`);
    const hashes = new Map<string, Uint8Array>();
    for (const [name, f] of frames) {
      const t = this.tree(name);
      for (const op of f.ops) {
        if (op.value === null) t.remove(op.key);
        else t.set(op.key, op.value);
      }
      const hash = t.workingHash();
      this.same(next, `the root hash of ${name}`, hash, f.hash);
      hashes.set(name, hash);
    }
    if (this.multi !== undefined) {
      // Every store's, the unchanged ones' too: the app hash covers them all.
      for (const name of this.multi.names) if (!hashes.has(name)) hashes.set(name, this.multi.tree(name).workingHash());
      this.same(next, "the app hash", commitInfoHash(hashes), firstOf(frames)?.appHash);
      this.multi.commit();
    } else {
      this.plain!.commit();
    }
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
