/**
 * The mutable tree: a working state over the last committed version, and the committed versions behind it.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { parseOptions } from "../base/options.js";
import { checkIterable, checkIterateOptions, checkKey, checkObject, checkString, checkValue, checkVersion } from "../base/validate.js";
import { latin1, latin1Bytes, type ByteString } from "../base/bytes.js";
import { digestBytes, type Digest } from "../base/hash.js";
import type { ExportNode } from "../tree/export-node.js";
import { iterateLeaves } from "../tree/iterate.js";
import { Mutator } from "../tree/mutate.js";
import { NONE, rootDigest } from "../tree/node.js";
import type { ReadonlyTree } from "../tree/readonly-tree.js";
import { VersionLog } from "../tree/version-log.js";
import { storeFileIn } from "../sqlite/connection.js";
import { ReadOnlyStore } from "../store/read/read-only-store.js";
import type { PruneResult } from "../prune/pruner.js";
import { importStore } from "../sync/store-import.js";
import type { Backend, PruneOptions } from "./backend.js";
import { MemoryBackend } from "./memory-backend.js";
import {
  importOptionsSchema,
  memoryOptionsSchema,
  openOptionsSchema,
  type ImportOptions,
  type MemoryOptions,
  type OpenOptions,
} from "./options.js";
import { DiskBackend } from "./disk-backend.js";
import { type VersionChange, checkVersionRange } from "../tree/store-contract.js";
import { type CommitmentProof, type IterateOptions } from "../tree/readonly-tree.js";

/** What {@link Tree.commit} returns. */
export interface CommitResult {
  version: number;
  hash: Uint8Array;
}

/**
 * A versioned IAVL tree. Writes go to the working state; {@link Tree.commit} turns it into the next version, whose
 * root hash equals cosmos/iavl's for the same operations.
 */
export class Tree {
  /** The roots of the working state and of the last committed version (NONE: empty). */
  private working: number;
  private committed: number;
  private lastVersion: number;
  private readonly mutator: Mutator;
  private closed = false;
  /** Bumped by every change to the working state, so that open iterators over it can tell. */
  private generation = 0;
  /** The working version's operations, for backends that log them. */
  private log = new VersionLog();
  /**
   * The leaf of each key of the working state, for a tree whose backend answers no reads by key (in memory): a get
   * is then one lookup instead of a walk down a tree that is mostly out of the processor's caches (cosmos/iavl keeps
   * its "fast nodes" index of the latest version for the same reason).
   */
  private readonly leaves: Map<ByteString, number> | undefined;

  /** @internal Use {@link Tree.memory} or `Tree.open`. */
  constructor(
    private readonly backend: Backend,
    initialVersion: number,
  ) {
    const { version, root } = backend.opened;
    this.lastVersion = version;
    this.committed = root;
    this.working = root;
    this.mutator = new Mutator(version > 0 ? version + 1 : initialVersion, backend.src);
    this.leaves = backend.logsOps ? undefined : new Map();
  }

  /** A tree held wholly in memory. */
  static memory(options?: MemoryOptions): Tree {
    const o = parseOptions(memoryOptionsSchema, options);
    return new Tree(new MemoryBackend(), o.initialVersion ?? 1);
  }

  /**
   * The tree stored in folder `dir`: creates the store when the folder is empty or missing, otherwise resumes at its
   * latest committed version. Only one writer may hold a store: a second one gets `LOCKED`, naming the holder.
   */
  static open(dir: string, options?: OpenOptions): Tree {
    checkString(dir, "dir");
    const o = parseOptions(openOptionsSchema, options);
    return new Tree(DiskBackend.open(dir, o), o.initialVersion ?? 1);
  }

  /**
   * Imports a state-sync snapshot (the nodes of one version in post-order, as {@link ReadonlyTree.export} gives or
   * `decodeItems` reads from the wire) into a new store in `dir`, a missing or empty folder, and opens it. The
   * stream is untrusted: anything but a valid IAVL tree (and, when `expectedHash` is given, that tree) is refused
   * with `INVALID_SNAPSHOT`, and then nothing is left in `dir`.
   */
  static async import(
    dir: string,
    nodes: Iterable<ExportNode> | AsyncIterable<ExportNode>,
    options: ImportOptions,
  ): Promise<Tree> {
    checkString(dir, "dir");
    checkIterable(nodes, "the nodes", true);
    const { version, expectedHash, onProgress, ...rest } = parseOptions(importOptionsSchema, options);
    const o = parseOptions(openOptionsSchema, rest);
    await importStore(dir, nodes, { version, expectedHash, onProgress, shardSize: o.shardSize });
    return Tree.open(dir, rest);
  }

  /**
   * Opens the store in `dir` read-only, for query processes beside the writer (in this process or another). It never
   * writes and never blocks the writer; `refresh()` moves it to the newest committed version.
   */
  static openReadOnly(dir: string): ReadOnlyStore {
    checkString(dir, "dir");
    return ReadOnlyStore.open(dir);
  }

  /**
   * Deletes every version after `version` from the store in `dir` (which no writer may hold), so that it reopens
   * at `version`. Returns how many versions were removed.
   */
  static rollback(dir: string, version: number): number {
    checkString(dir, "dir");
    checkVersion(version);
    storeFileIn(dir);
    return DiskBackend.rollback(dir, version);
  }

  /** The last committed version (0 before the first commit). */
  get version(): number {
    this.open();
    return this.lastVersion;
  }

  /** Root hash of the last committed version (the empty hash before the first commit). */
  get hash(): Uint8Array {
    this.open();
    return digestBytes(rootDigest(this.backend.src, this.committed));
  }

  /** Number of keys in the last committed version. */
  get size(): number {
    this.open();
    return this.committed === NONE ? 0 : this.backend.src.t.size(this.committed);
  }

  /** Sets `key` to `value` in the working state. */
  set(key: Uint8Array, value: Uint8Array): void {
    this.open();
    checkKey(key);
    checkValue(value);
    // Copies, so that a caller reusing its buffers cannot change what was set (the key's string is one).
    const id = latin1(key);
    const copy = this.backend.copyValue(value);
    const leaf = this.backend.src.t.leaf(id, copy, this.mutator.version);
    this.working = this.mutator.setLeaf(this.working, leaf);
    if (this.leaves !== undefined) this.leaves.set(id, leaf);
    else this.log.set(new Uint8Array(key), id, leaf, copy, this.mutator.updated);
    this.generation++;
  }

  /** The value of `key` in the working state, or undefined. */
  get(key: Uint8Array): Uint8Array | undefined {
    this.open();
    checkKey(key);
    // Copies: the tree's own arrays (a value still waiting to be written, say) must not change through the result.
    if (this.leaves !== undefined) {
      const leaf = this.leaves.get(latin1(key));
      return leaf === undefined ? undefined : this.backend.src.t.value(leaf)?.slice();
    }
    const c = this.log.changes.size > 0 ? this.log.change(key) : undefined;
    if (c !== undefined) return c.value?.slice();
    return this.backend.committedValue(key);
  }

  /** True when `key` is present in the working state. */
  has(key: Uint8Array): boolean {
    return this.get(key) !== undefined;
  }

  /** Removes `key` from the working state; true when it was present. */
  remove(key: Uint8Array): boolean {
    this.open();
    checkKey(key);
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

  /**
   * `[key, value]` pairs of the working state in key order (`start` inclusive, `end` exclusive). A change to the
   * working state while the iterator is open makes its next step throw `CONCURRENT_MODIFICATION`.
   */
  *iterate(opts: IterateOptions = {}): IterableIterator<[Uint8Array, Uint8Array]> {
    this.open();
    checkIterateOptions(opts);
    const gen = this.generation;
    const resume = (): void => {
      this.open();
      if (gen !== this.generation) throw new IavlError("CONCURRENT_MODIFICATION", "the working tree changed during iteration");
    };
    const t = this.backend.src.t;
    for (const leaf of iterateLeaves(this.working, opts, this.backend.src, resume)) {
      yield [latin1Bytes(t.key(leaf)), (t.value(leaf) ?? this.backend.valueOf(t, leaf)).slice()];
    }
  }

  /** The root hash the working state would commit to. */
  workingHash(): Uint8Array {
    this.open();
    return digestBytes(this.workingDigest());
  }

  private workingDigest(): Digest {
    return rootDigest(this.backend.src, this.working);
  }

  /** Commits the working state as the next version. Nothing changes when the store refuses the write. */
  commit(): CommitResult {
    this.open();
    const version = this.mutator.version;
    const hash = this.workingDigest();
    this.backend.commit({ version, root: this.working, hash, log: this.log, orphans: this.mutator.orphans });
    this.mutator.takeOrphans(); // the backend's now
    this.committed = this.working;
    this.lastVersion = version;
    this.mutator.version = version + 1;
    this.log = new VersionLog();
    this.generation++;
    return { version, hash: digestBytes(hash) };
  }

  /** A read-only view of committed `version`. */
  at(version: number): ReadonlyTree {
    this.open();
    checkVersion(version);
    if (version > this.lastVersion) {
      throw new IavlError("VERSION_NOT_FOUND", `version ${version} was never committed (latest is ${this.lastVersion})`);
    }
    return this.backend.view(version, () => this.open());
  }

  /**
   * The net changes of each version in [`from`, `to`], version by version, each in key order: every key whose last
   * operation in the version was a set, with that value, and every key the version removed that existed before it,
   * with value null (a key created and removed within one version is no change). Read from what the store logs
   * (no tree walk for a store; for `Tree.memory()`, only the nodes each version made), in pages, so memory stays
   * bounded. A version whose changes are gone (pruned, or imported) throws `VERSION_PRUNED`.
   */
  *changes(from: number, to: number): IterableIterator<VersionChange> {
    this.open();
    checkVersionRange(from, to);
    if (to > this.lastVersion) throw new IavlError("VERSION_NOT_FOUND", `version ${to} was never committed (latest is ${this.lastVersion})`);
    for (let v = from; v <= to; v++) {
      for (const c of this.backend.changes(v, () => this.open())) {
        yield { version: v, key: c.key, value: c.value };
      }
    }
  }

  /** The committed versions still readable, oldest first. */
  versions(): number[] {
    this.open();
    return this.backend.versions();
  }

  /** An ICS23 proof of `key` against {@link Tree.hash} (the last committed version). */
  proof(key: Uint8Array): CommitmentProof {
    this.open();
    if (this.lastVersion === 0) throw new IavlError("VERSION_NOT_FOUND", "nothing has been committed yet");
    return this.at(this.lastVersion).proof(key);
  }

  /**
   * Removes every committed version ≤ `version` (the latest is always kept; with `keepEvery`, so is every version
   * that is a multiple of it and was committed as a checkpoint, as `keepEvery` in the open options makes them). The
   * work runs in a worker thread while this tree goes on committing; the promise settles once the space is reclaimed.
   */
  async prune(version: number, options: PruneOptions = {}): Promise<PruneResult> {
    this.open();
    checkVersion(version);
    checkObject(options, "the prune options");
    if (options.keepEvery !== undefined) checkVersion(options.keepEvery);
    if (options.onProgress !== undefined && typeof options.onProgress !== "function") {
      throw new IavlError("INVALID_ARGUMENT", "onProgress must be a function");
    }
    return this.backend.prune(version, options);
  }

  /** Resolves when every committed version is durable (immediately unless durability is "async"). */
  async flush(): Promise<void> {
    this.open();
    await this.backend.flush();
  }

  /** Releases the tree and its store; every later call throws `CLOSED`. Closing twice is harmless. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.generation++;
    this.working = NONE;
    this.committed = NONE;
    this.leaves?.clear();
    this.backend.close();
  }

  private open(): void {
    if (this.closed) throw new IavlError("CLOSED", "the tree is closed");
  }
}
