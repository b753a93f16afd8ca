/**
 * The persistent store of a writer: the tree's working set in memory over a store on disk. Leaves and the operation
 * log are written every version, branch nodes at checkpoints; clean nodes are evicted to stay within the memory
 * budget; reopening loads the last checkpoint and replays the log since, checking the root hash.
 * @module
 */
import { NONE, type NodeTable } from "../../tree/node.js";
import type { ReadonlyTree } from "../../tree/readonly-tree.js";
import type { Op } from "../../tree/version-log.js";
import type { Connection } from "../../sqlite/connection.js";
import type { LeafWrite, VersionRow, VersionWrite } from "../../sqlite/rows.js";
import { keyId } from "../../base/bytes.js";
import type { IavlError } from "../../base/errors.js";
import { digestBytes } from "../../base/hash.js";
import { ValueArena } from "../../base/value-arena.js";
import { packOps, type PackedOp } from "../../sqlite/version-ops.js";
import type { StoreReader } from "../../sqlite/store-reader.js";
import { StoreWriter } from "../../sqlite/store-writer.js";
import { collectDirty, NO_BRANCHES } from "../../checkpoint/dirty-branches.js";
import { leafKeySeq, storedSeq } from "../../sqlite/node-rows.js";
import { evict, NodeLoader } from "../node-loader.js";
import { RebuiltTrees, rebuildVersion, type VersionTree } from "../read/rebuild.js";
import { startRead, storedValue, VersionView } from "../read/version-view.js";
import { boundWal } from "../../sqlite/wal.js";
import { WalCheckpointer } from "./wal-checkpointer.js";
import { WriteQueue } from "./write-queue.js";
import type { CommitInput, KeyChange, Latest, ValueOf } from "../../tree/store-contract.js";

/**
 * Memory a resident node costs, to turn the memory budget into a node count: its 64-byte record and 40 bytes of node
 * keys in the node table, its share of a key string (a leaf's, ~72 B for a 56-byte key, shared by the branch that
 * names it), two array slots, and the table's room to grow (up to half its size again).
 */
const NODE_BYTES = 200;

/** How a working set writes and how much memory it may use. */
export interface WorkingSetOptions {
  /** Versions between checkpoints. */
  checkpointInterval: number;
  /** Memory for tree nodes, in MiB. */
  memoryBudgetMiB: number;
  /** Land versions in a writer thread (durability "async") with this many in flight; undefined: write inline. */
  asyncQueue: number | undefined;
  /** Versions that are multiples of this are committed as checkpoints (snapshots kept by pruning). */
  snapshotEvery: number | undefined;
  busyTimeoutMs: number;
}

/** The working set of one writer over its store file. */
export class WorkingSet {
  readonly src: NodeLoader;
  readonly valueOf: ValueOf;
  /** The last committed version at open (0 for none) and its root. */
  readonly opened: Latest;
  /** The last committed version, whose tree is the live one. */
  private live: Latest;
  private readonly t: NodeTable;
  private readonly store: StoreWriter;
  private readonly read: StoreReader;
  private readonly trees: RebuiltTrees;
  private lastCheckpoint = 0;
  private needCheckpoint = false;
  private readonly budgetNodes: number;
  private readonly keepDepth: number;
  private residentEstimate = 0;
  /** Keys in the tree at the last commit. */
  private size = 0;
  /** The id the next leaves row gets. */
  private nextLeaf: number;
  /** The background writer, with durability "async". */
  private readonly queue: WriteQueue | undefined;
  private readonly wal: WalCheckpointer;
  /** The tree's copies of the values set, held until their version is written (leaves drop them then). */
  private readonly arena = new ValueArena();

  constructor(
    db: Connection,
    private readonly file: string,
    private readonly options: WorkingSetOptions,
  ) {
    this.store = new StoreWriter(db);
    this.read = this.store.read;
    this.src = new NodeLoader(this.read);
    this.t = this.src.t;
    this.trees = new RebuiltTrees(this.read);
    this.valueOf = storedValue(this.read);
    this.budgetNodes = Math.floor((options.memoryBudgetMiB * 1024 * 1024) / NODE_BYTES);
    // Keep whole the top levels that fit in half the budget (depths 0..d hold 2^(d+1) − 1 nodes); the other half is
    // for dirty and recently loaded nodes.
    this.keepDepth = Math.max(1, Math.floor(Math.log2(this.budgetNodes / 2)) - 1);
    this.nextLeaf = this.read.leaves.nextId();
    this.opened = this.load();
    this.live = this.opened;
    this.wal = new WalCheckpointer(file, options.busyTimeoutMs);
    // Values in flight to the writer thread count against the memory budget: a quarter of it at most.
    const inFlight = (options.memoryBudgetMiB * 2 ** 20) / 4;
    if (options.asyncQueue !== undefined) this.queue = new WriteQueue(file, this.opened.version, options.asyncQueue, inFlight, options.busyTimeoutMs, this.wal.shared);
  }

  /** Reopen: the last checkpoint, then the log since, checked against the stored root hash. */
  private load(): Latest {
    const latest = this.read.versions.latest();
    if (latest === undefined) return { version: 0, root: NONE };
    this.lastCheckpoint = this.read.versions.replayBase(latest.version)?.version ?? 0;
    const root = rebuildVersion(this.read, this.src, latest);
    this.residentEstimate = this.budgetNodes; // unknown after a replay: sweep at the first commit
    this.size = root === NONE ? 0 : this.t.size(root);
    return { version: latest.version, root };
  }

  /** The tree's own copy of a value being set: valid until its version is written, when leaves drop their values. */
  copyValue(value: Uint8Array): Uint8Array {
    return this.arena.copy(value);
  }

  /** The value of `key` in the last committed version, in an array of the caller's own. */
  committedValue(key: Uint8Array): Uint8Array | undefined {
    if (this.queue !== undefined) {
      const c = this.queue.pending(key);
      if (c !== undefined) return c.value?.slice();
    }
    // A row read from SQLite is already a fresh array.
    return this.read.leaves.valueAt(key, Number.MAX_SAFE_INTEGER) ?? undefined;
  }

  /** Persists a version; throws with nothing changed when it cannot. */
  commit(c: CommitInput): void {
    const { ops, changes } = c.log;
    const t = this.t;
    // One leaves row per key the version changed (set, or removed having been there before it), in key order, so
    // that the version's changes read back in key order from consecutive ids; a set's leaf takes its row's id.
    const firstLeaf = this.nextLeaf;
    const changed = ops.filter((op) => op.last && (op.leaf !== NONE || op.existed)).map((op) => ({ op, id: keyId(op.key) }));
    changed.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const rowOf = new Map<Op, number>();
    const leaves: LeafWrite[] = [];
    const finals: number[] = [];
    changed.forEach(({ op }, row) => {
      rowOf.set(op, row);
      const leaf = op.leaf;
      if (leaf === NONE) {
        leaves.push({ id: firstLeaf + row, key: op.key, hash: null, value: null });
        return;
      }
      t.setSeq(leaf, leafKeySeq(firstLeaf + row));
      finals.push(leaf);
      leaves.push({ id: firstLeaf + row, key: op.key, hash: t.hashBytes(leaf), value: t.value(leaf) ?? null });
    });
    const packed: PackedOp[] = ops.map((op) => ({ key: op.key, set: op.leaf !== NONE, row: rowOf.get(op) }));
    const every = this.options.snapshotEvery;
    // Snapshots kept by keepEvery are checkpoints, so that their trees stay whole after the versions around them go.
    const checkpoint =
      this.needCheckpoint || c.version - this.lastCheckpoint >= this.options.checkpointInterval || (every !== undefined && c.version % every === 0);
    const root = c.root;
    let batch: ReturnType<typeof collectDirty> | undefined;
    try {
      batch = checkpoint ? collectDirty(t, root) : undefined;
      const write: VersionWrite = {
        version: {
          version: c.version,
          hash: digestBytes(c.hash),
          size: root === NONE ? 0 : t.size(root),
          checkpoint,
          rootVersion: checkpoint && root !== NONE ? t.version(root) : null,
          rootSeq: checkpoint && root !== NONE ? storedSeq(t.seq(root)) : null,
          ops: ops.length,
          firstLeaf,
          leafRows: leaves.length,
        },
        leaves,
        firstLeaf,
        ops: packOps(packed),
        branches: batch?.rows ?? NO_BRANCHES,
      };
      // Committed values live in the value rows; the tree keeps only keys and hashes, once the values are there,
      // and their copies' memory takes the values of later versions.
      // Captures the version number, not `c`: with async, a closure holding `c` would keep the version's whole tree
      // and log alive until it lands.
      const version = c.version;
      // A leaf replaced and freed before its version landed may have lent its id to another node: its sequence, a
      // leaves row id, tells.
      const seqs = finals.map((n) => t.seq(n));
      const written = (): void => {
        finals.forEach((n, i) => {
          if (t.seq(n) === seqs[i]) t.setValue(n, undefined);
        });
        this.arena.release(version);
      };
      // Sealed before the write: a commit that fails is retried at the same version, which releases these too.
      this.arena.seal(c.version);
      if (this.queue !== undefined) this.queue.push(write, changes, written);
      else {
        boundWal(this.store.db, this.file);
        this.store.writeVersion(write);
        this.wal.committed();
        written();
      }
    } catch (e) {
      batch?.undo();
      for (const leaf of finals) t.setSeq(leaf, 0);
      throw e;
    }
    this.live = { version: c.version, root };
    // The nodes this version replaced are in no tree this writer keeps: views of older versions read rebuilt trees,
    // and a walk still going over the previous one holds them through its pin.
    for (const n of c.orphans) t.retire(n);
    this.nextLeaf = firstLeaf + leaves.length;
    if (checkpoint) {
      this.lastCheckpoint = c.version;
      this.needCheckpoint = false;
    }
    // A path copy replaces nodes one for one (the old ones are garbage once no view holds them): the tree gains
    // resident nodes by loading evicted ones and by growing, a leaf and a branch per new key.
    const size = root === NONE ? 0 : t.size(root);
    this.residentEstimate += this.src.loads + 2 * Math.max(0, size - this.size);
    this.size = size;
    this.src.loads = 0;
    // Evicted nodes are loaded back from disk, so they must be there first. The version is committed by now: a
    // writer that failed meanwhile refuses the next commit instead, so that this one stays whole.
    if (this.residentEstimate > this.budgetNodes && (this.queue === undefined || this.queue.landed(c.version))) {
      this.residentEstimate = evict(t, root, this.keepDepth);
      // What stays is mostly dirty: the next commit checkpoints so that it can be evicted.
      if (this.residentEstimate > this.budgetNodes * 0.75) this.needCheckpoint = true;
    }
  }

  /** The net changes that made committed `version`, in key order. */
  changes(version: number, alive: () => void): Iterable<KeyChange> {
    return this.openView(version, alive).changes();
  }

  /** A view of committed `version`. */
  view(version: number, alive: () => void): ReadonlyTree {
    return this.openView(version, alive);
  }

  private openView(version: number, alive: () => void): VersionView {
    if (this.queue !== undefined && version > this.queue.durable) this.queue.waitFor(version);
    const start = startRead(this.read, version);
    return new VersionView(this.read, start, () => this.treeAt(start.row), alive);
  }

  /**
   * The tree of a committed version, asked for at each read that needs it: the live one while the version is the
   * latest, else one rebuilt from the checkpoint before it (the live tree's nodes of older versions are freed).
   */
  private treeAt(row: VersionRow): VersionTree {
    if (row.version === this.live.version) return { root: this.live.root, src: this.src };
    return this.trees.tree(row);
  }

  /** Committed versions still readable, oldest first (those still in flight to the writer thread too). */
  versions(): number[] {
    // In flight first: a version landing between the two reads is then seen by at least one of them.
    const inFlight = this.queue?.inFlight() ?? [];
    const stored = this.read.versions.list();
    return [...stored, ...inFlight.filter((v) => v > (stored[stored.length - 1] ?? 0))];
  }

  /** Resolves when every committed version is on disk. */
  async flush(): Promise<void> {
    await this.queue?.flush();
  }

  /**
   * Lands what is queued and stops the writer and checkpointer threads; the connection is the owner's to close.
   * Returns a failure of the background writer that no caller has been told of yet.
   */
  close(): IavlError | undefined {
    this.trees.clear();
    try {
      return this.queue?.close();
    } finally {
      this.wal.close();
    }
  }
}
