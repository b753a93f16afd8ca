/**
 * The working state of a tree: the changes made since the last commit, on top of the last committed version, and
 * the version they are about to become. It keeps what a commit hands its store (the new root, its hash, the log of
 * operations, the nodes replaced) and knows nothing of how the store keeps them.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { latin1, type ByteString } from "../base/bytes.js";
import type { Digest } from "../base/hash.js";
import { iterateLeaves } from "./iterate.js";
import { Mutator } from "./mutate.js";
import { NONE, rootDigest } from "./node.js";
import type { IterateOptions } from "./readonly-tree.js";
import type { CommitInput, Latest, WorkingStore } from "./store-contract.js";
import { VersionLog } from "./version-log.js";

/** The working state over a store's last committed version. */
export class WorkingTree {
  /** The roots of the working state and of the last committed version (NONE: empty). */
  private working: number;
  private committed: number;
  private lastVersion: number;
  private readonly mutator: Mutator;
  /** Bumped by every change to the working state, so that open iterators over it can tell. */
  private generation = 0;
  /** The working version's operations, for stores that log them. */
  private log = new VersionLog();
  /**
   * The leaf of each key of the working state, for a store that answers no reads by key (in memory): a get is then
   * one lookup instead of a walk down a tree that is mostly out of the processor's caches (cosmos/iavl keeps its
   * "fast nodes" index of the latest version for the same reason).
   */
  private readonly leaves: Map<ByteString, number> | undefined;

  constructor(
    private readonly store: WorkingStore,
    opened: Latest,
    initialVersion: number,
  ) {
    this.lastVersion = opened.version;
    this.committed = opened.root;
    this.working = opened.root;
    this.mutator = new Mutator(opened.version > 0 ? opened.version + 1 : initialVersion, store.src);
    this.leaves = store.logsOps ? undefined : new Map();
  }

  /** The last committed version (0 before the first commit). */
  get version(): number {
    return this.lastVersion;
  }

  /** Root hash of the last committed version. */
  get hash(): Digest {
    return rootDigest(this.store.src, this.committed);
  }

  /** Number of keys in the last committed version. */
  get size(): number {
    return this.committed === NONE ? 0 : this.store.src.t.size(this.committed);
  }

  /** Sets `key` to `value`. */
  set(key: Uint8Array, value: Uint8Array): void {
    // Copies, so that a caller reusing its buffers cannot change what was set (the key's string is one).
    const id = latin1(key);
    const copy = this.store.copyValue(value);
    const leaf = this.store.src.t.leaf(id, copy, this.mutator.version);
    this.working = this.mutator.setLeaf(this.working, leaf);
    if (this.leaves !== undefined) this.leaves.set(id, leaf);
    else this.log.set(new Uint8Array(key), id, leaf, copy, this.mutator.updated);
    this.generation++;
  }

  /** The value of `key`, or undefined, in an array of the caller's own. */
  get(key: Uint8Array): Uint8Array | undefined {
    // Copies: the tree's own arrays (a value still waiting to be written, say) must not change through the result.
    if (this.leaves !== undefined) {
      const leaf = this.leaves.get(latin1(key));
      return leaf === undefined ? undefined : this.store.src.t.value(leaf)?.slice();
    }
    const c = this.log.changes.size > 0 ? this.log.change(key) : undefined;
    if (c !== undefined) return c.value?.slice();
    return this.store.committedValue(key);
  }

  /** Removes `key`; true when it was present. */
  remove(key: Uint8Array): boolean {
    const id = latin1(key);
    if (this.leaves !== undefined && !this.leaves.has(id)) return false;
    const root = this.mutator.remove(this.working, id);
    if (!this.mutator.found) return false;
    this.working = root;
    if (this.leaves !== undefined) this.leaves.delete(id);
    else this.log.remove(new Uint8Array(key), id);
    this.generation++;
    return true;
  }

  /** `[key, value]` pairs in key order; `resume` runs before each step (it throws once the tree is closed). */
  *iterate(opts: IterateOptions, resume: () => void): IterableIterator<[Uint8Array, Uint8Array]> {
    const gen = this.generation;
    const check = (): void => {
      resume();
      if (gen !== this.generation) throw new IavlError("CONCURRENT_MODIFICATION", "the working tree changed during iteration");
    };
    const { src, valueOf } = this.store;
    const t = src.t;
    for (const leaf of iterateLeaves(this.working, opts, src, check)) yield [t.keyBytes(leaf), (t.value(leaf) ?? valueOf(t, leaf)).slice()];
  }

  /** The root hash the working state would commit to. */
  workingHash(): Digest {
    return rootDigest(this.store.src, this.working);
  }

  /** What committing the working state hands the store. */
  next(): CommitInput {
    return { version: this.mutator.version, root: this.working, hash: this.workingHash(), log: this.log, orphans: this.mutator.orphans };
  }

  /** The store took `c` (and now owns its orphans): the working state becomes the last committed version. */
  committedAs(c: CommitInput): void {
    this.mutator.takeOrphans();
    this.committed = c.root;
    this.lastVersion = c.version;
    this.mutator.version = c.version + 1;
    this.log = new VersionLog();
    this.generation++;
  }

  /** Drops the tree's nodes and lookups; open iterators fail at their next step. */
  clear(): void {
    this.generation++;
    this.working = NONE;
    this.committed = NONE;
    this.leaves?.clear();
  }
}
