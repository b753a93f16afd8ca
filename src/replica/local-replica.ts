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

  /** Opens (creating when missing) the replica in `dir`: a plain store when `stores` is undefined, else a multi-store. */
  static open(dir: string, stores: string[] | undefined, options: ReplicaStoreOptions): LocalReplica {
    if (stores === undefined) return new LocalReplica(Tree.open(dir, options), undefined);
    return new LocalReplica(undefined, MultiTree.open(dir, { ...options, stores }));
  }

  /** The last version committed here (0: none). */
  get version(): number {
    return this.plain?.version ?? this.multi!.version;
  }

  /** Throws `CORRUPT` unless the last version committed here has the hashes of `v` (the same version at the source). */
  check(frames: ReadonlyMap<string, FeedVersion>): void {
    for (const [name, f] of frames) this.same(name, this.tree(name).hash, f);
    const first = frames.values().next().value;
    if (this.multi !== undefined && first?.appHash != null && !equalBytes(this.multi.appHash, first.appHash)) {
      throw diverged(first.version, "the app hash", this.multi.appHash, first.appHash);
    }
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
      this.same(name, t.workingHash(), f);
    }
    if (this.plain !== undefined) {
      this.plain.commit();
      return;
    }
    const done = this.multi!.commit();
    const first = frames.values().next().value;
    if (first?.appHash != null && !equalBytes(done.appHash, first.appHash)) throw diverged(done.version, "the app hash", done.appHash, first.appHash);
  }

  close(): void {
    this.plain?.close();
    this.multi?.close();
  }

  private tree(name: string): Tree {
    return this.plain ?? this.multi!.tree(name);
  }

  private same(name: string, mine: Uint8Array, f: FeedVersion): void {
    if (!equalBytes(mine, f.hash)) throw diverged(f.version, `the root hash of ${name}`, mine, f.hash);
  }
}

function diverged(version: number, what: string, mine: Uint8Array, theirs: Uint8Array): IavlError {
  return new IavlError("CORRUPT", `at version ${version} ${what} here is ${toHex(mine)} and the source's is ${toHex(theirs)}: the replica stopped at its last good version`);
}
