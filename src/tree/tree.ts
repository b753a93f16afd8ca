/**
 * The mutable tree: a working state over the last committed version, and the committed versions behind it.
 * @module
 */
import { IavlError } from "../errors.js";
import { memoryOptionsSchema, parseOptions, type MemoryOptions } from "../options.js";
import { EMPTY_HASH } from "./hash.js";
import { iterateLeaves, type IterateOptions } from "./iterator.js";
import { Mutator } from "./mutate.js";
import { hashNode, MEMORY_SOURCE, type Node } from "./node.js";
import type { CommitmentProof } from "./proof.js";
import { findLeaf } from "./read.js";
import { memoryValue, RootView } from "./root-view.js";
import type { ReadonlyTree } from "./snapshot.js";
import { checkBound, checkKey, checkValue, checkVersion } from "./validate.js";

/** What {@link Tree.commit} returns. */
export interface CommitResult {
  version: number;
  hash: Uint8Array;
}

/**
 * A versioned IAVL tree. Writes go to the working state; {@link commit} turns it into the next version, whose root
 * hash equals cosmos/iavl's for the same operations.
 */
export class Tree {
  private working: Node | undefined;
  private committed: Node | undefined;
  private lastVersion: number;
  private readonly mutator: Mutator;
  private readonly roots = new Map<number, Node | undefined>();
  private closed = false;
  /** Bumped by every change to the working state, so that open iterators over it can tell. */
  private generation = 0;

  private constructor(initialVersion: number) {
    this.lastVersion = 0;
    this.mutator = new Mutator(initialVersion, MEMORY_SOURCE);
  }

  /** A tree held wholly in memory. */
  static memory(options?: MemoryOptions): Tree {
    const o = parseOptions(memoryOptionsSchema, options);
    return new Tree(o.initialVersion ?? 1);
  }

  /** The last committed version (0 before the first commit). */
  get version(): number {
    this.open();
    return this.lastVersion;
  }

  /** Root hash of the last committed version (the empty hash before the first commit). */
  get hash(): Uint8Array {
    this.open();
    return this.committed === undefined ? EMPTY_HASH : hashNode(this.committed, MEMORY_SOURCE);
  }

  /** Number of keys in the last committed version. */
  get size(): number {
    this.open();
    return this.committed?.size ?? 0;
  }

  /** Sets `key` to `value` in the working state. */
  set(key: Uint8Array, value: Uint8Array): void {
    this.open();
    checkKey(key);
    checkValue(value);
    this.working = this.mutator.set(this.working, key, value).root;
    this.generation++;
  }

  /** The value of `key` in the working state, or undefined. */
  get(key: Uint8Array): Uint8Array | undefined {
    this.open();
    checkKey(key);
    return findLeaf(this.working, key, MEMORY_SOURCE)?.value;
  }

  /** True when `key` is present in the working state. */
  has(key: Uint8Array): boolean {
    this.open();
    checkKey(key);
    return findLeaf(this.working, key, MEMORY_SOURCE) !== undefined;
  }

  /** Removes `key` from the working state; true when it was present. */
  remove(key: Uint8Array): boolean {
    this.open();
    checkKey(key);
    const r = this.mutator.remove(this.working, key);
    if (r.value === undefined) return false;
    this.working = r.root;
    this.generation++;
    return true;
  }

  /**
   * `[key, value]` pairs of the working state in key order (`start` inclusive, `end` exclusive). A change to the
   * working state while the iterator is open makes its next step throw `CONCURRENT_MODIFICATION`.
   */
  *iterate(opts: IterateOptions = {}): IterableIterator<[Uint8Array, Uint8Array]> {
    this.open();
    checkBound(opts.start, "start");
    checkBound(opts.end, "end");
    const gen = this.generation;
    for (const leaf of iterateLeaves(this.working, opts, MEMORY_SOURCE)) {
      if (gen !== this.generation) throw new IavlError("CONCURRENT_MODIFICATION", "the working tree changed during iteration");
      yield [leaf.key, memoryValue(leaf)];
    }
  }

  /** The root hash the working state would commit to. */
  workingHash(): Uint8Array {
    this.open();
    return this.working === undefined ? EMPTY_HASH : hashNode(this.working, MEMORY_SOURCE);
  }

  /** Commits the working state as the next version. */
  commit(): CommitResult {
    this.open();
    const version = this.mutator.version;
    const hash = this.workingHash();
    this.roots.set(version, this.working);
    this.committed = this.working;
    this.lastVersion = version;
    this.mutator.version = version + 1;
    this.generation++;
    return { version, hash };
  }

  /** A read-only view of committed `version`. */
  at(version: number): ReadonlyTree {
    this.open();
    checkVersion(version);
    if (!this.roots.has(version)) {
      throw new IavlError("VERSION_NOT_FOUND", `version ${version} was never committed (latest is ${this.lastVersion})`);
    }
    return new RootView(version, this.roots.get(version), MEMORY_SOURCE, memoryValue, () => this.open());
  }

  /** The committed versions still readable, oldest first. */
  versions(): number[] {
    this.open();
    return [...this.roots.keys()];
  }

  /** An ICS23 proof of `key` against {@link hash} (the last committed version). */
  proof(key: Uint8Array): CommitmentProof {
    this.open();
    if (this.lastVersion === 0) throw new IavlError("VERSION_NOT_FOUND", "nothing has been committed yet");
    return this.at(this.lastVersion).proof(key);
  }

  /** Releases the tree; every later call throws `CLOSED`. Closing twice is harmless. */
  close(): void {
    this.closed = true;
    this.roots.clear();
    this.working = undefined;
    this.committed = undefined;
  }

  private open(): void {
    if (this.closed) throw new IavlError("CLOSED", "the tree is closed");
  }
}
