/**
 * A read-only handle on a store, for query processes beside the writer: read-only connections, no transaction held
 * between statements (so the writer's WAL is never pinned), and a version that moves only on `refresh()`.
 * @module
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type Database from "better-sqlite3";
import { rebuildVersion } from "../checkpoint/rebuild.js";
import { StoreSource } from "../checkpoint/node-source.js";
import { IavlError } from "../errors.js";
import type { ExportNode } from "../export/types.js";
import { EMPTY_HASH } from "../tree/hash.js";
import type { IterateOptions } from "../tree/iterator.js";
import type { Node } from "../tree/node.js";
import type { CommitmentProof } from "../tree/proof.js";
import type { ReadonlyTree } from "../tree/snapshot.js";
import { checkVersion } from "../tree/validate.js";
import { openReader, STORE_FILE } from "./connection.js";
import { checkSchema } from "./migrate.js";
import { StoreReader, type VersionRow } from "./store.js";
import { StoreView } from "./view.js";

/** Nodes a rebuilt tree may load before it is dropped and rebuilt on demand, to bound a long-lived reader. */
const CACHE_LOADS = 500_000;

/**
 * Reads of a store that another process (or this one) writes. Every read sees one committed version whole, or
 * throws `VERSION_PRUNED` when pruning removed that version meanwhile; it never returns data of another version.
 */
export class ReadOnlyStore implements ReadonlyTree {
  private readonly store: StoreReader;
  private readonly src: StoreSource;
  private row: VersionRow | undefined;
  private cache: { version: number; root: Node | undefined } | undefined;
  private closed = false;

  private constructor(private readonly db: Database.Database) {
    this.store = new StoreReader(db);
    this.src = new StoreSource(this.store);
    this.row = this.store.latest();
  }

  /** Opens the store in `dir` read-only; throws `NOT_A_STORE` when there is none. */
  static open(dir: string): ReadOnlyStore {
    const file = join(dir, STORE_FILE);
    if (!existsSync(file)) throw new IavlError("NOT_A_STORE", `${dir} holds no iavlite store`);
    const db = openReader(file);
    try {
      checkSchema(db, file);
      return new ReadOnlyStore(db);
    } catch (e) {
      db.close();
      throw e;
    }
  }

  /** The version this handle reads (0 when the store has none yet). */
  get version(): number {
    this.open();
    return this.row?.version ?? 0;
  }

  /** Root hash of {@link version}. */
  get hash(): Uint8Array {
    return this.current()?.hash ?? EMPTY_HASH;
  }

  /** Number of keys in {@link version}. */
  get size(): number {
    return this.current()?.size ?? 0;
  }

  /** Moves to the newest committed version and returns it; never moves backwards. */
  refresh(): number {
    this.open();
    const latest = this.store.latest();
    if (latest !== undefined && (this.row === undefined || latest.version > this.row.version)) this.row = latest;
    return this.version;
  }

  get(key: Uint8Array): Uint8Array | undefined {
    return this.current()?.get(key);
  }

  has(key: Uint8Array): boolean {
    return this.current()?.has(key) ?? false;
  }

  iterate(opts?: IterateOptions): IterableIterator<[Uint8Array, Uint8Array]> {
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

  /** A view of committed `version` (any kept version, older or newer than {@link version}). */
  at(version: number): ReadonlyTree {
    this.open();
    checkVersion(version);
    const row = this.store.version(version);
    if (row === undefined) {
      if (this.store.wasPruned(version)) {
        throw new IavlError("VERSION_PRUNED", `version ${version} has been pruned (the oldest kept is ${this.store.earliest()})`);
      }
      throw new IavlError("VERSION_NOT_FOUND", `version ${version} was never committed`);
    }
    return this.view(row);
  }

  /** The committed versions kept, oldest first. */
  versions(): number[] {
    this.open();
    return this.store.versions();
  }

  /** Closes the connection; later calls throw `CLOSED`. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.cache = undefined;
    this.db.close();
  }

  private current(): ReadonlyTree | undefined {
    this.open();
    return this.row === undefined ? undefined : this.view(this.row);
  }

  private view(row: VersionRow): ReadonlyTree {
    return new StoreView(this.store, row, () => this.rootOf(row), this.src, this.src.uncached(true), () => this.open());
  }

  private rootOf(row: VersionRow): Node | undefined {
    if (this.cache?.version === row.version && this.src.loads < CACHE_LOADS) return this.cache.root;
    this.src.loads = 0;
    const root = rebuildVersion(this.store, this.src, row);
    this.cache = { version: row.version, root };
    return root;
  }

  private open(): void {
    if (this.closed) throw new IavlError("CLOSED", "the read-only store is closed");
  }
}

