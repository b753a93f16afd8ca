/**
 * The mutable tree: a working state over the last committed version, and the committed versions behind it.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { checkEntry, checkIterateOptions, checkKey, checkObject, checkString, checkVersion } from "../base/validate.js";
import { digestBytes } from "../base/hash.js";
import type { ExportNode } from "../tree/export-node.js";
import type { CommitmentProof, IterateOptions, ReadonlyTree } from "../tree/readonly-tree.js";
import { checkVersionRange, type HistoryOptions, historyQuery, type KeyHistory, type KeyOp, type VersionChange } from "../tree/store-contract.js";
import { WorkingTree } from "../tree/working-tree.js";
import { ReadOnlyStore } from "../store/read/read-only-store.js";
import type { PruneResult } from "../prune/pruner.js";
import type { Backend, PruneOptions } from "./backend.js";
import { diskBackend, importedBackend, memoryBackend, rollbackBackend, type Opened } from "./open-backend.js";
import type { ImportOptions, MemoryOptions, OpenOptions } from "./options.js";

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
  private readonly backend: Backend;
  private readonly state: WorkingTree;
  private closed = false;
  /** While a group is open: the version it began at, and the failure of a commit in it, if one failed. */
  private grouping: { from: number; failed: unknown } | undefined;
  /** Why the tree refuses every call but `close`: a group whose versions did not land. */
  private broken: IavlError | undefined;

  /** @internal Use {@link Tree.memory} or `Tree.open`. */
  constructor({ backend, initialVersion }: Opened) {
    this.backend = backend;
    this.state = new WorkingTree(backend, backend.opened, initialVersion);
  }

  /** A tree held wholly in memory. */
  static memory(options?: MemoryOptions): Tree {
    return new Tree(memoryBackend(options));
  }

  /**
   * The tree stored in folder `dir`: creates the store when the folder is empty or missing, otherwise resumes at its
   * latest committed version. Only one writer may hold a store: a second one gets `LOCKED`, naming the holder.
   */
  static open(dir: string, options?: OpenOptions): Tree {
    return new Tree(diskBackend(dir, options));
  }

  /**
   * Imports a state-sync snapshot (the nodes of one version in post-order, as {@link ReadonlyTree.export} gives or
   * `decodeItems` reads from the wire) into a new store in `dir`, a missing or empty folder, and opens it. The
   * stream is untrusted: anything but a valid IAVL tree (and, when `expectedHash` is given, that tree) is refused
   * with `INVALID_SNAPSHOT`, and then nothing is left in `dir`.
   */
  static async import(dir: string, nodes: Iterable<ExportNode> | AsyncIterable<ExportNode>, options: ImportOptions): Promise<Tree> {
    return new Tree(await importedBackend(dir, nodes, options));
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
    return rollbackBackend(dir, version);
  }

  /** The last committed version (0 before the first commit). */
  get version(): number {
    this.ensureOpen();
    return this.state.version;
  }

  /** Root hash of the last committed version (the empty hash before the first commit). */
  get hash(): Uint8Array {
    this.ensureOpen();
    return digestBytes(this.state.hash);
  }

  /** Number of keys in the last committed version. */
  get size(): number {
    this.ensureOpen();
    return this.state.size;
  }

  /**
   * Sets `key` to `value` in the working state. A key over `MAX_KEY_BYTES` (64 KiB) or a value over `MAX_VALUE_BYTES`
   * is refused with `INVALID_ARGUMENT`, and nothing changes.
   */
  set(key: Uint8Array, value: Uint8Array): void {
    this.ensureOpen();
    checkEntry(key, value);
    this.state.set(key, value);
  }

  /** The value of `key` in the working state, or undefined. */
  get(key: Uint8Array): Uint8Array | undefined {
    this.ensureOpen();
    checkKey(key);
    return this.state.get(key);
  }

  /** True when `key` is present in the working state. */
  has(key: Uint8Array): boolean {
    return this.get(key) !== undefined;
  }

  /** Removes `key` from the working state; true when it was present. */
  remove(key: Uint8Array): boolean {
    this.ensureOpen();
    checkKey(key);
    return this.state.remove(key);
  }

  /**
   * `[key, value]` pairs of the working state in key order (`start` inclusive, `end` exclusive). A change to the
   * working state while the iterator is open makes its next step throw `CONCURRENT_MODIFICATION`.
   */
  *iterate(opts: IterateOptions = {}): IterableIterator<[Uint8Array, Uint8Array]> {
    this.ensureOpen();
    checkIterateOptions(opts);
    yield* this.state.iterate(opts, () => this.ensureOpen());
  }

  /** The root hash the working state would commit to. */
  workingHash(): Uint8Array {
    this.ensureOpen();
    return digestBytes(this.state.workingHash());
  }

  /** Commits the working state as the next version. Nothing changes when the store refuses the write. */
  commit(): CommitResult {
    this.ensureOpen();
    const g = this.grouping;
    if (g?.failed !== undefined) throw new IavlError("CORRUPT", `a commit of this group failed (${(g.failed as Error).message}): the group lands nothing`);
    const c = this.state.next();
    try {
      this.backend.commit(c);
    } catch (e) {
      if (g !== undefined) g.failed = e;
      throw e;
    }
    this.state.committedAs(c);
    return { version: c.version, hash: digestBytes(c.hash) };
  }

  /**
   * Runs `fn` and lands the versions it commits together: on disk in one SQLite transaction (durability "normal" or
   * "full"; "async" lands versions in the background anyway), so that a page several of them change is written once.
   * While `fn` runs they are this tree's (its reads and views see them) but no other connection's, and a crash loses
   * them all; once `group` returns, or throws what `fn` threw, every version `fn` committed is durable. A commit in
   * `fn` that fails drops the whole group: the tree then refuses every call but `close` with `CORRUPT`, and reopening
   * it continues from the version the group began at. Groups do not nest.
   */
  group<T>(fn: () => T): T {
    this.beginGroup();
    try {
      return fn();
    } finally {
      this.endGroup();
    }
  }

  /** @internal Opens a group (see {@link Tree.group}): a multi-store opens one on each of its trees. */
  beginGroup(): void {
    this.ensureOpen();
    if (this.grouping !== undefined) throw new IavlError("INVALID_ARGUMENT", "a group of commits is already open on this tree");
    this.backend.beginGroup();
    this.grouping = { from: this.state.version, failed: undefined };
  }

  /**
   * @internal Ends the group {@link Tree.beginGroup} opened: its versions land, unless `drop` is set or a commit in it
   * failed, and then none of them does. Throws what failed the landing; either way a tree whose versions did not all
   * land is broken from then on.
   */
  endGroup(drop = false): void {
    const g = this.grouping;
    if (g === undefined || this.closed) return;
    this.grouping = undefined;
    const land = !drop && g.failed === undefined;
    const lost = (why: unknown): IavlError =>
      new IavlError("CORRUPT", `versions ${g.from + 1}–${this.state.version} of a group did not land (${(why as Error).message}); reopen the store to continue from version ${g.from}`, { cause: why });
    try {
      this.backend.endGroup(land);
    } catch (e) {
      this.broken = lost(e);
      throw e;
    }
    if (!land && this.state.version > g.from) this.broken = lost(g.failed ?? new Error("the group was dropped"));
  }

  /** A read-only view of committed `version`. */
  at(version: number): ReadonlyTree {
    this.ensureOpen();
    checkVersion(version);
    if (version > this.state.version) {
      throw new IavlError("VERSION_NOT_FOUND", `version ${version} was never committed (latest is ${this.state.version})`);
    }
    return this.backend.view(version, () => this.ensureOpen());
  }

  /**
   * @internal The operations that made committed `version`, in the order they were applied: what replaying it
   * takes (a multi-store undoing a version some stores committed). `VERSION_PRUNED` when they are not kept.
   */
  operations(version: number): KeyOp[] {
    this.ensureOpen();
    checkVersion(version);
    return this.backend.operations(version, () => this.ensureOpen());
  }

  /**
   * The net changes of each version in [`from`, `to`], version by version, each in key order: every key whose last
   * operation in the version was a set, with that value, and every key the version removed that existed before it,
   * with value null (a key created and removed within one version is no change). Read from what the store logs
   * (no tree walk for a store; for `Tree.memory()`, only the nodes each version made), in pages, so memory stays
   * bounded. A version whose changes are gone (pruned, or imported) throws `VERSION_PRUNED`.
   */
  *changes(from: number, to: number): IterableIterator<VersionChange> {
    this.ensureOpen();
    checkVersionRange(from, to);
    if (to > this.state.version) throw new IavlError("VERSION_NOT_FOUND", `version ${to} was never committed (latest is ${this.state.version})`);
    for (let v = from; v <= to; v++) {
      for (const c of this.backend.changes(v, () => this.ensureOpen())) yield { version: v, key: c.key, value: c.value };
    }
  }

  /**
   * The versions where `key` was set (with its value) or removed (value null), newest first unless `reverse`, in
   * pages of `limit` (`next` names where the next page starts). `from` defaults to, and is raised to, the oldest
   * version from which every version's changes are kept; `to` defaults to the latest. With `before`, also the key's
   * last change before `from`. A store answers from one range of its `(key, version)` index: no replay, no tree walk.
   */
  history(key: Uint8Array, options?: HistoryOptions): KeyHistory {
    this.ensureOpen();
    checkKey(key);
    const q = historyQuery(options);
    if (this.state.version === 0) throw new IavlError("VERSION_NOT_FOUND", "nothing has been committed yet");
    return this.backend.history(key, q, this.state.version, () => this.ensureOpen());
  }

  /** The committed versions still readable, oldest first. */
  versions(): number[] {
    this.ensureOpen();
    return this.backend.versions();
  }

  /** An ICS23 proof of `key` against {@link Tree.hash} (the last committed version). */
  proof(key: Uint8Array): CommitmentProof {
    this.ensureOpen();
    if (this.state.version === 0) throw new IavlError("VERSION_NOT_FOUND", "nothing has been committed yet");
    return this.at(this.state.version).proof(key);
  }

  /**
   * Removes every committed version ≤ `version` (the latest is always kept; with `keepEvery`, so is every version
   * that is a multiple of it and was committed as a checkpoint, as `keepEvery` in the open options makes them). The
   * work runs in a worker thread while this tree goes on committing; the promise settles once the space is reclaimed.
   */
  async prune(version: number, options: PruneOptions = {}): Promise<PruneResult> {
    this.ensureOpen();
    checkVersion(version);
    checkObject(options, "the prune options");
    if (options.keepEvery !== undefined) checkVersion(options.keepEvery);
    if (options.onProgress !== undefined && typeof options.onProgress !== "function") {
      throw new IavlError("INVALID_ARGUMENT", "onProgress must be a function");
    }
    return this.backend.prune(version, options);
  }

  /**
   * Resolves when every committed version has landed in the store's SQLite file, where other processes, read-only
   * handles and the CLI see it: at once with durability "full", or "normal" without a commit journal. With the
   * journal a committed version is already durable; with durability "async", only once it has landed.
   */
  async flush(): Promise<void> {
    this.ensureOpen();
    await this.backend.flush();
  }

  /** Releases the tree and its store; every later call throws `CLOSED`. Closing twice is harmless. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.state.clear();
    this.backend.close();
  }

  private ensureOpen(): void {
    if (this.closed) throw new IavlError("CLOSED", "the tree is closed");
    if (this.broken !== undefined) throw this.broken;
  }
}
