/**
 * A read-only handle on a store, for query processes beside the writer: read-only connections, no transaction held
 * between statements (so the writer's WAL is never pinned), and a version that moves only on `refresh()`.
 * @module
 */
import { fromSqlite, IavlError } from "../../base/errors.js";
import { EMPTY_HASH } from "../../base/hash.js";
import { checkIterateOptions, checkKey, checkVersion } from "../../base/validate.js";
import type { ExportNode } from "../../tree/export-node.js";
import type { AuditOptions, AuditReport, CommitmentProof, IterateOptions, ReadonlyTree } from "../../tree/readonly-tree.js";
import { openFolderReadOnly } from "../folder.js";
import { StoreReader } from "../../sqlite/store-reader.js";
import { RebuiltTrees } from "./rebuild.js";
import { VersionView } from "./version-view.js";
import { startRead, VersionRead, type ReadStart } from "./version-read.js";
import { checkVersionRange, type HistoryOptions, historyQuery, type KeyHistory, type VersionChange, type VersionOperations } from "../../tree/store-contract.js";
import { storedHistory } from "./key-history.js";

/**
 * Reads of a store that another process (or this one) writes. Every read sees one committed version whole, or
 * throws `VERSION_PRUNED` when pruning removed that version meanwhile (`VERSION_ROLLED_BACK` when a rollback did);
 * it never returns data of another version.
 */
export class ReadOnlyStore implements ReadonlyTree {
  private readonly store: StoreReader;
  private readonly trees: RebuiltTrees;
  private start: ReadStart | undefined;
  /** Rollbacks recorded at the last {@link refresh}. */
  private refreshedSince = 0;
  private closed = false;

  private constructor(db: ReturnType<typeof openFolderReadOnly>) {
    this.store = new StoreReader(db);
    this.trees = new RebuiltTrees(this.store);
    this.refresh();
  }

  /** Opens the store in `dir` read-only; throws `NOT_A_STORE` when there is none. */
  static open(dir: string): ReadOnlyStore {
    let db: ReturnType<typeof openFolderReadOnly> | undefined;
    try {
      db = openFolderReadOnly(dir);
      return new ReadOnlyStore(db);
    } catch (e) {
      db?.close();
      throw fromSqlite(e, `${dir}: opening the store to read`);
    }
  }

  /** The version this handle reads (0 when the store has none yet). */
  get version(): number {
    this.ensureOpen();
    return this.start?.row.version ?? 0;
  }

  /** Root hash of {@link version}. */
  get hash(): Uint8Array {
    return this.current()?.hash ?? EMPTY_HASH.slice();
  }

  /** Number of keys in {@link version}. */
  get size(): number {
    return this.current()?.size ?? 0;
  }

  /**
   * Moves to the newest committed version and returns it. After a rollback that is an older version, or the same
   * number committed again with other content.
   */
  refresh(): number {
    this.ensureOpen();
    const [since, latest] = this.reading("its latest version", () => [this.store.versions.rollbacks(), this.store.versions.latest()] as const);
    this.refreshedSince = since;
    this.start = latest === undefined ? undefined : { row: latest, since };
    return this.version;
  }

  get(key: Uint8Array): Uint8Array | undefined {
    return this.current()?.get(key);
  }

  has(key: Uint8Array): boolean {
    return this.current()?.has(key) ?? false;
  }

  iterate(opts?: IterateOptions): IterableIterator<[Uint8Array, Uint8Array]> {
    checkIterateOptions(opts);
    return this.current()?.iterate(opts) ?? [][Symbol.iterator]();
  }

  proof(key: Uint8Array): CommitmentProof {
    const view = this.current();
    if (view === undefined) throw new IavlError("EMPTY_TREE", "the store has no committed version yet");
    return view.proof(key);
  }

  export(): IterableIterator<ExportNode> {
    return this.current()?.export() ?? [][Symbol.iterator]();
  }

  audit(options?: AuditOptions): AuditReport {
    const view = this.current();
    if (view === undefined) return { ok: true, version: 0, nodes: 0, leaves: 0, faults: [] };
    return view.audit(options);
  }

  /** A view of committed `version` (any kept version, older or newer than {@link version}). */
  at(version: number): ReadonlyTree {
    this.ensureOpen();
    checkVersion(version);
    return this.view(startRead(this.store, version));
  }

  /**
   * @internal A view of `version` as of the last {@link refresh}: `VERSION_ROLLED_BACK` when a rollback since then
   * replaced it, instead of a read of the new history's version of that number (a multi-store reader's whole
   * version is one such).
   */
  atRefreshed(version: number): ReadonlyTree {
    this.ensureOpen();
    checkVersion(version);
    return this.view(this.startSince(version, this.refreshedSince));
  }

  /** @internal The first version this store committed or imported: it holds no version before it. */
  firstVersion(): number {
    this.ensureOpen();
    return this.reading("its first version", () => this.store.versions.first());
  }

  /** Begins reading `version`, unless a rollback after the first `since` replaced or deleted it. */
  private startSince(version: number, since: number): ReadStart {
    // Checked before the row is read: a rollback may have deleted it, which is no "never committed".
    if (this.reading(`the state of version ${version}`, () => this.store.versions.state(version, since)) === "rolled-back") {
      throw new IavlError("VERSION_ROLLED_BACK", `version ${version} was replaced by a rollback since this read began`);
    }
    return startRead(this.store, version, since);
  }

  /**
   * The net changes of each version in [`from`, `to`], as `Tree.changes` gives them, all of one history: once a
   * rollback replaces a version the stream has read or is yet to read, its next step throws `VERSION_ROLLED_BACK`.
   */
  changes(from: number, to: number): IterableIterator<VersionChange> {
    this.ensureOpen();
    checkVersionRange(from, to);
    // Counted now, not at the first step: a rollback between the call and the first step counts too.
    return this.eachVersion(from, to, this.rollbacks(), function* (v, view) {
      for (const c of view.changes()) yield { version: v, key: c.key, value: c.value };
    });
  }

  /**
   * The operations of each version in [`from`, `to`] in their order, with each version's root hash (see
   * {@link VersionView.operations}): what a replica replays. All of one history, as {@link changes}.
   */
  operations(from: number, to: number): IterableIterator<VersionOperations> {
    this.ensureOpen();
    checkVersionRange(from, to);
    return this.eachVersion(from, to, this.rollbacks(), (v, view) => [{ version: v, hash: view.hash, ops: view.operations() }]);
  }

  /** What `read` gives of each version in [`from`, `to`] in turn, every one of the history as of `since` rollbacks. */
  private *eachVersion<T>(from: number, to: number, since: number, read: (v: number, view: VersionView) => Iterable<T>): IterableIterator<T> {
    for (let v = from; v <= to; v++) {
      // The handle may have been closed between two steps of the stream.
      this.ensureOpen();
      // A rollback below v replaced v (or deleted it), and every version read before it too if it went lower.
      yield* read(v, this.view(this.startSince(v, since)));
    }
  }

  /**
   * A page of `key`'s history up to the version this handle reads, as `Tree.history` gives it; `VERSION_ROLLED_BACK`
   * when a rollback since the last {@link refresh} replaced that version.
   */
  history(key: Uint8Array, options?: HistoryOptions): KeyHistory {
    this.ensureOpen();
    checkKey(key);
    const q = historyQuery(options);
    if (this.version === 0) throw new IavlError("VERSION_NOT_FOUND", "nothing has been committed yet");
    const h = this.reading("the history of a key", () => storedHistory(this.store, key, q, this.version));
    if (this.reading(`the state of version ${this.version}`, () => this.store.versions.state(this.version, this.refreshedSince)) === "rolled-back") {
      throw new IavlError("VERSION_ROLLED_BACK", `version ${this.version} was replaced by a rollback since this handle's refresh`);
    }
    return h;
  }

  /** The committed versions kept, oldest first. */
  versions(): number[] {
    this.ensureOpen();
    return this.reading("the versions kept", () => this.store.versions.list());
  }

  /** The oldest committed version kept (0 when none): one seek, where {@link versions} reads them all. */
  earliest(): number {
    this.ensureOpen();
    return this.reading("the oldest version kept", () => this.store.versions.earliest() ?? 0);
  }

  private rollbacks(): number {
    return this.reading("the rollbacks recorded", () => this.store.versions.rollbacks());
  }

  /** Runs a read of the versions table, SQLite's errors told as what they mean (a damaged page: CORRUPT). */
  private reading<T>(what: string, read: () => T): T {
    try {
      return read();
    } catch (e) {
      throw fromSqlite(e, `${this.store.db.name}: reading ${what}`);
    }
  }

  /** Closes the connection; later calls throw `CLOSED`. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.trees.clear();
    this.store.db.close();
  }

  private current(): VersionView | undefined {
    this.ensureOpen();
    return this.start === undefined ? undefined : this.view(this.start);
  }

  private view(start: ReadStart): VersionView {
    return new VersionView(new VersionRead(this.store, start, () => this.ensureOpen()), () => this.trees.tree(start.row));
  }

  private ensureOpen(): void {
    if (this.closed) throw new IavlError("CLOSED", "the read-only store is closed");
  }
}
