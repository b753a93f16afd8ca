/**
 * The persistent backend: the tree's working set in memory over a store on disk. Leaves and the operation log are
 * written every version; branch nodes at checkpoints; clean nodes are evicted to stay within the memory budget;
 * reopening loads the last checkpoint and replays the log since, checking the root hash.
 * @module
 */
import { existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import type Database from "better-sqlite3";
import { IavlError } from "../errors.js";
import type { ResolvedOpenOptions } from "../options.js";
import type { Backend, CommitInput, PruneOptions } from "../tree/backend.js";
import { keyId } from "../tree/encoding.js";
import type { Node } from "../tree/node.js";
import type { ValueOf } from "../tree/proof.js";
import type { ReadonlyTree } from "../tree/snapshot.js";
import { openReader, openWriter, STORE_FILE } from "../sqlite/connection.js";
import { WriterLock } from "../sqlite/lock.js";
import { checkSchema, migrate } from "../sqlite/migrate.js";
import { LEAF_BASE, OpKind, StoreWriter, type LogRow, type StoreReader, type VersionRow, type VersionWrite } from "../sqlite/store.js";
import { WriteQueue } from "../sqlite/write-queue.js";
import { storedValue, StoreView } from "../sqlite/view.js";
import { collectDirty } from "./checkpoint.js";
import { evict, StoreSource } from "./node-source.js";
import { rebuildVersion } from "./rebuild.js";
import { Pruner, type PruneResult } from "../prune/pruner.js";

/** Rough bytes a resident node costs (object, key, hash), to turn the memory budget into a node count. */
const NODE_BYTES = 360;

/** Files a store folder may hold; anything else means the folder is not ours. */
const OWN_FILES = new Set([STORE_FILE, `${STORE_FILE}-wal`, `${STORE_FILE}-shm`, "writer.lock", "writer.lock-journal", "writer.json"]);

/** Opens (creating when empty) the store in `dir` and takes its writer lock. */
export function openStore(
  dir: string,
  shardSize: number,
  durability: ResolvedOpenOptions["durability"],
): { db: Database.Database; lock: WriterLock; file: string } {
  if (existsSync(dir)) {
    if (!statSync(dir).isDirectory()) throw new IavlError("NOT_A_STORE", `${dir} is not a folder`);
    const foreign = readdirSync(dir).filter((f) => !OWN_FILES.has(f));
    if (foreign.length > 0 && !existsSync(join(dir, STORE_FILE))) {
      throw new IavlError("NOT_A_STORE", `${dir} is not an iavlite store (it holds ${foreign.slice(0, 3).join(", ")}…)`);
    }
  } else {
    mkdirSync(dir, { recursive: true });
  }
  const file = join(dir, STORE_FILE);
  if (existsSync(file)) {
    // Checked read-only first, so that a store this version must refuse is never opened for writing.
    const ro = openReader(file);
    try {
      checkSchema(ro, file);
    } finally {
      ro.close();
    }
  }
  const lock = WriterLock.acquire(dir);
  let db: Database.Database | undefined;
  try {
    db = openWriter(file, durability);
    migrate(db, file);
    db.prepare("INSERT OR IGNORE INTO meta (name, value) VALUES ('shard_size', ?)").run(shardSize);
    return { db, lock, file };
  } catch (e) {
    db?.close();
    lock.release();
    throw e;
  }
}

/** The persistent {@link Backend}. */
export class WorkingSet implements Backend {
  readonly logsOps = true;
  readonly src: StoreSource;
  readonly valueOf: ValueOf;
  readonly opened: { version: number; root: Node | undefined };
  private readonly store: StoreWriter;
  private lastCheckpoint = 0;
  private needCheckpoint = false;
  private readonly budgetNodes: number;
  private readonly keepDepth: number;
  private residentEstimate = 0;
  private replayCache: { version: number; root: Node | undefined } | undefined;
  private closed = false;
  private pruner: Pruner | undefined;
  private autoPrunedTo = 0;
  private autoPruning = false;
  private autoPruneError: unknown;
  /** The background writer, with durability "async". */
  private readonly queue: WriteQueue | undefined;

  constructor(
    private readonly db: Database.Database,
    private readonly lock: WriterLock,
    private readonly options: ResolvedOpenOptions,
    private readonly file: string,
  ) {
    this.store = new StoreWriter(db);
    this.src = new StoreSource(this.store);
    this.valueOf = storedValue(this.store);
    this.budgetNodes = Math.floor((options.memoryBudgetMiB * 1024 * 1024) / NODE_BYTES);
    // Keep whole the top levels that fit in half the budget; the other half is for dirty and recently loaded nodes.
    this.keepDepth = Math.max(1, Math.floor(Math.log2(this.budgetNodes / 2)));
    this.opened = this.load();
    if (options.durability === "async") this.queue = new WriteQueue(file, this.opened.version, options.asyncQueue);
  }

  /** Reopen: the last checkpoint, then the log since, checked against the stored root hash. */
  private load(): { version: number; root: Node | undefined } {
    const latest = this.store.latest();
    if (latest === undefined) return { version: 0, root: undefined };
    this.lastCheckpoint = this.store.replayBase(latest.version)?.version ?? 0;
    const root = rebuildVersion(this.store, this.src, latest);
    this.residentEstimate = this.budgetNodes; // unknown after a replay: sweep at the first commit
    return { version: latest.version, root };
  }

  committedValue(key: Uint8Array): Uint8Array | undefined {
    if (this.queue !== undefined) {
      const c = this.queue.pending(keyId(key));
      if (c !== undefined) return c.value ?? undefined;
    }
    return this.store.valueAt(key, Number.MAX_SAFE_INTEGER) ?? undefined;
  }

  commit(c: CommitInput): void {
    if (this.autoPruneError !== undefined) throw this.autoPruneError;
    const finals = new Set(c.finalLeaves.values());
    const log: LogRow[] = c.ops.map((op, i) => {
      const seq = LEAF_BASE + i + 1;
      if (op.leaf === undefined) return { seq, key: op.key, kind: OpKind.Delete, hash: null };
      if (finals.has(op.leaf)) return { seq, key: op.key, kind: OpKind.Leaf, hash: op.leaf.hash ?? null };
      return { seq, key: op.key, kind: OpKind.Transient, hash: null };
    });
    const every = this.options.keepEvery;
    // Snapshots kept by keepEvery are checkpoints, so that their trees stay whole after the versions around them go.
    const checkpoint =
      this.needCheckpoint || c.version - this.lastCheckpoint >= this.options.checkpointInterval || (every !== undefined && c.version % every === 0);
    const batch = checkpoint ? collectDirty(c.root) : undefined;
    const root = c.root;
    try {
      const write: VersionWrite = {
        version: {
          version: c.version,
          hash: c.hash,
          size: root?.size ?? 0,
          checkpoint,
          rootVersion: checkpoint && root !== undefined ? root.version : null,
          rootSeq: checkpoint && root !== undefined ? root.seq : null,
          ops: log.length,
        },
        log,
        kv: [...c.changes.values()],
        branches: batch?.rows ?? [],
      };
      // Committed values live in the kv table; the tree keeps only keys and hashes, once the values are there.
      const dropValues = (): void => {
        for (const leaf of finals) leaf.value = undefined;
      };
      if (this.queue !== undefined) this.queue.push(write, c.changes, dropValues);
      else {
        this.store.writeVersion(write);
        dropValues();
      }
    } catch (e) {
      batch?.undo();
      throw e;
    }
    if (checkpoint) {
      this.lastCheckpoint = c.version;
      this.needCheckpoint = false;
    }
    this.residentEstimate += this.src.loads + c.ops.length * ((root?.height ?? 0) + 1);
    this.src.loads = 0;
    if (this.residentEstimate > this.budgetNodes) {
      // Evicted nodes are loaded back from disk, so they must be there first.
      this.queue?.waitFor(c.version);
      this.residentEstimate = evict(root, this.keepDepth);
      // What stays is mostly dirty: the next commit checkpoints so that it can be evicted.
      if (this.residentEstimate > this.budgetNodes * 0.75) this.needCheckpoint = true;
    }
    this.autoPrune(c.version);
  }

  view(version: number, latest: { version: number; root: Node | undefined }, guard: () => void): ReadonlyTree {
    if (this.queue !== undefined && version > this.queue.durable) this.queue.waitFor(version);
    const row = this.store.version(version);
    if (row === undefined) throw notKept(this.store, version);
    return new StoreView(this.store, row, () => this.rootAt(row, latest), this.src, this.src.uncached(true), guard);
  }

  /** The tree of a committed version: the live one, a checkpoint, or a replay from the checkpoint before it. */
  private rootAt(row: VersionRow, latest: { version: number; root: Node | undefined }): Node | undefined {
    if (row.version === latest.version) return latest.root;
    if (this.replayCache?.version === row.version) return this.replayCache.root;
    const root = rebuildVersion(this.store, this.src, row);
    this.replayCache = { version: row.version, root };
    return root;
  }

  versions(): number[] {
    // In flight first: a version landing between the two reads is then seen by at least one of them.
    const inFlight = this.queue?.inFlight() ?? [];
    const stored = this.store.versions();
    return [...stored, ...inFlight.filter((v) => v > (stored[stored.length - 1] ?? 0))];
  }

  async flush(): Promise<void> {
    await this.queue?.flush();
  }

  async prune(upTo: number, opts: PruneOptions): Promise<PruneResult> {
    // Pruning reads and rewrites the store: what is still queued for it must land first.
    await this.queue?.flush();
    this.pruner ??= new Pruner(this.file);
    return this.pruner.prune(upTo, opts.keepEvery, opts.onProgress);
  }

  /** Starts a background prune when the keepRecent policy asks for one; its failure surfaces at the next commit. */
  private autoPrune(version: number): void {
    const keep = this.options.keepRecent;
    if (keep === undefined) return;
    const target = version - keep;
    // Prune in steps of a tenth of the window, so that each prune has enough to do to be worth starting, and never
    // queue one behind another: while one runs, the next commit after it ends asks for the newest target instead.
    if (this.autoPruning || target < 1 || target - this.autoPrunedTo < Math.max(1, Math.floor(keep / 10))) return;
    this.autoPrunedTo = target;
    this.autoPruning = true;
    this.prune(target, { keepEvery: this.options.keepEvery })
      .catch((e: unknown) => {
        this.autoPruneError ??= e;
      })
      .finally(() => {
        this.autoPruning = false;
      });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.queue?.close();
    } finally {
      // A prune cut short is safe: every step can be run again.
      void this.pruner?.close();
      this.closeStore();
    }
  }

  private closeStore(): void {
    try {
      this.db.close();
    } finally {
      this.lock.release();
    }
  }
}

/** The error for a version the store does not hold: pruned when older than the oldest kept, else never committed. */
export function notKept(store: StoreReader, version: number): IavlError {
  if (store.wasPruned(version)) {
    return new IavlError("VERSION_PRUNED", `version ${version} has been pruned (the oldest kept is ${store.earliest()})`);
  }
  return new IavlError("VERSION_NOT_FOUND", `version ${version} was never committed`);
}
