/**
 * Counters for the "pages" layout of issue 38 (subtree pages under a pinned spine), taken before anyone builds it:
 * which stored nodes the exact mutator (src/tree/mutate.ts) needs for each change, and what that would cost in
 * page rows against today's one row per node.
 *
 * - A canonical page for page size L is a subtree whose root has size (leaf count) ≤ L and whose parent has size > L;
 *   the nodes of size > L are the spine, held in memory with their children's hash, height, size (and their own
 *   key: a branch's key is the leftmost key of its right subtree, a leaf of another page for a spine node).
 * - Pages are those of the last checkpoint's tree (nodes of version ≤ it are stored; newer ones are in memory).
 * - The Mutator reads a child from the node table and calls its source only to load one that is not in memory, so a
 *   tree in memory never calls the source at all: the probe records at the table ({@link RecordingTable}), every
 *   read of a node's own record (its links, key or version: "opened") and every child handed out ("obtained"), whose
 *   height, size and hash a page's or the spine's parent record holds.
 * @module
 */
import type { ByteString } from "../src/base/bytes.js";
import { digestBytes } from "../src/base/hash.js";
import { Mutator } from "../src/tree/mutate.js";
import { hashNode, memorySource, NONE, NodeTable, rootDigest, type NodeSource } from "../src/tree/node.js";

/** Touch flags: the node's own record was read (not only the summary its parent holds). */
const OPENED = 1;
/** The touch came after the descent reached its leaf (balancing, rotations, the way back up). */
const ASCENT = 2;
/** The touch came while hashing the change's path. */
const HASHING = 4;

/** A node table that records, while asked to, which nodes the tree's algorithms read. */
export class RecordingTable extends NodeTable {
  /** Touches since {@link start}: node id × 8 + flags. */
  readonly touches: number[] = [];
  private on = false;
  private phase = 0;
  /** The change's own new leaf: its key is read before the descent starts. */
  private fresh = NONE;

  /** Records from now on, a change that adds leaf `fresh` ({@link NONE}: none). */
  start(fresh: number): void {
    this.touches.length = 0;
    this.on = true;
    this.phase = 0;
    this.fresh = fresh;
  }

  /** What follows is the hashing of the change's path. */
  hashing(): void {
    this.phase = HASHING;
  }

  stop(): void {
    this.on = false;
  }

  private opened(n: number): void {
    this.touches.push(n * 8 + (this.phase | OPENED));
  }

  private obtained(n: number): void {
    if (n !== NONE) this.touches.push(n * 8 + this.phase);
  }

  override left(n: number): number {
    const c = super.left(n);
    if (this.on) this.opened(n), this.obtained(c);
    return c;
  }

  override right(n: number): number {
    const c = super.right(n);
    if (this.on) this.opened(n), this.obtained(c);
    return c;
  }

  override prefix(n: number): number {
    if (this.on) {
      this.opened(n);
      // A comparison with a leaf other than the change's own ends the descent (set: the leaf it lands on; remove:
      // the leaf it removes).
      if (this.phase === 0 && n !== this.fresh && super.height(n) === 0) this.phase = ASCENT;
    }
    return super.prefix(n);
  }

  override key(n: number): ByteString {
    if (this.on) this.opened(n);
    return super.key(n);
  }

  override version(n: number): number {
    if (this.on) this.opened(n);
    return super.version(n);
  }

  override copy(n: number, version: number): number {
    if (this.on) this.opened(n);
    return super.copy(n, version);
  }
}

/** The checkpoint tree in pre-order, where every subtree is the run of its 2·size − 1 nodes. */
export interface Preorder {
  readonly ids: Int32Array;
  readonly depth: Uint8Array;
  /** The greatest node id in the tree. */
  readonly maxId: number;
}

export function preorder(t: NodeTable, root: number): Preorder {
  const count = root === NONE ? 0 : 2 * t.size(root) - 1;
  const ids = new Int32Array(count);
  const depth = new Uint8Array(count);
  const stack: number[] = root === NONE ? [] : [root];
  const depths: number[] = [0];
  let k = 0;
  let maxId = 0;
  while (stack.length > 0) {
    const n = stack.pop()!;
    const d = depths.pop()!;
    ids[k] = n;
    depth[k++] = d;
    if (n > maxId) maxId = n;
    if (t.height(n) > 0) stack.push(t.right(n), t.left(n)), depths.push(d + 1, d + 1);
  }
  if (k !== count) throw new Error(`bench: a tree of ${count} nodes by its sizes walked ${k}`);
  return { ids, depth, maxId };
}

/** A node of the spine, in {@link PageMap.pageOf}. */
export const SPINE = -1;
/** A node that was not in the mapped tree. */
const UNMAPPED = -2;

/** The canonical pages of one tree for page size L. */
export interface PageMap {
  readonly L: number;
  /** By node id, for the nodes of the mapped tree: its page, or {@link SPINE}. */
  readonly pageOf: Int32Array;
  /** By page (numbered in pre-order): its root node and leaf count. */
  readonly roots: Int32Array;
  readonly leaves: Int32Array;
  readonly spine: number;
}

export function mapPages(t: NodeTable, pre: Preorder, L: number): PageMap {
  const pageOf = new Int32Array(pre.maxId + 1).fill(UNMAPPED);
  const roots: number[] = [];
  const leaves: number[] = [];
  const ids = pre.ids;
  let spine = 0;
  // Pre-order skips each page whole, so the first node of size ≤ L met is a page root whose parent is of the spine.
  for (let i = 0; i < ids.length; ) {
    const n = ids[i]!;
    const s = t.size(n);
    if (s > L) {
      pageOf[n] = SPINE;
      spine++;
      i++;
      continue;
    }
    const p = roots.length;
    roots.push(n);
    leaves.push(s);
    for (const end = i + 2 * s - 1; i < end; i++) pageOf[ids[i]!] = p;
  }
  return { L, pageOf, roots: Int32Array.from(roots), leaves: Int32Array.from(leaves), spine };
}

/**
 * Bytes of a page row of `leaves` leaves: each node in post-order stores height (1), size (4), version (4), hash (32)
 * and its child links within the page (2 × 2); each leaf its 56-byte key inline and a leaves-row id (8).
 */
export const pageBytes = (leaves: number): number => (2 * leaves - 1) * 45 + leaves * 64;

/**
 * SQLite pages a row of `bytes` payload occupies with `pageSize`-byte pages: the b-tree leaf page, and the overflow
 * pages of what exceeds the local payload limit (sqlite's btree.c: maxLocal U − 35, minLocal (U − 12)·32/255 − 23).
 */
export function sqlitePages(bytes: number, pageSize = 4096): number {
  const maxLocal = pageSize - 35;
  if (bytes <= maxLocal) return 1;
  const usable = pageSize - 4;
  const minLocal = Math.floor(((pageSize - 12) * 32) / 255) - 23;
  const k = minLocal + ((bytes - minLocal) % usable);
  const local = k <= maxLocal ? k : minLocal;
  return 1 + Math.ceil((bytes - local) / usable);
}

/** Small counts: their sum, and a histogram for quantiles. */
export class Tally {
  n = 0;
  sum = 0;
  max = 0;
  private readonly hist = new Float64Array(256);

  add(x: number): void {
    this.n++;
    this.sum += x;
    if (x > this.max) this.max = x;
    this.hist[Math.min(x, 255)]!++;
  }

  merge(o: Tally): void {
    this.n += o.n;
    this.sum += o.sum;
    this.max = Math.max(this.max, o.max);
    for (let k = 0; k < 256; k++) this.hist[k]! += o.hist[k]!;
  }

  get mean(): number {
    return this.n === 0 ? 0 : this.sum / this.n;
  }

  quantile(q: number): number {
    let seen = 0;
    for (let k = 0; k < 256; k++) if ((seen += this.hist[k]!) >= q * this.n) return k;
    return 255;
  }
}

/** The kinds of change, as counted. */
export const KINDS = ["update", "insert", "remove"] as const;
type Kind = 0 | 1 | 2;

/** What the changes of one kind cost, for one page size. */
export class ChangeCounts {
  /** (a) Distinct pages whose records the change reads, only the spine resident. */
  readonly pagesA = new Tally();
  /** (b) Those not read since the last checkpoint. */
  readonly pagesB = new Tally();
  /** SQLite pages (4 KiB, overflow included) of the (a) and (b) reads. */
  readonly sqliteA = new Tally();
  readonly sqliteB = new Tally();
  /**
   * (a), its SQLite pages and today's (a), over the changes whose descent read a page (its leaf, or the leaf an insert
   * lands beside, was stored): a change past the memory budget.
   */
  readonly coldPages = new Tally();
  readonly coldSqlite = new Tally();
  readonly coldRows = new Tally();
  /** (a) if the spine and pages held no child summaries: pages of every node handed out, opened or not. */
  readonly pagesObtained = new Tally();
  /** Today's layout, the top levels as many as the spine's nodes resident: (a) distinct stored rows touched. */
  readonly rowsA = new Tally();
  /** Today's (b): those not read since the last checkpoint. */
  readonly rowsB = new Tally();
  /** Changes that read more than one page. */
  multi = 0;
  /** Changes whose balancing read a page other than the one its descent ended in. */
  foreign = 0;
  /** Changes whose descent read no page (the leaf and its path were in memory). */
  inMemory = 0;

  merge(o: ChangeCounts): void {
    for (const k of ["pagesA", "pagesB", "sqliteA", "sqliteB", "coldPages", "coldSqlite", "coldRows", "pagesObtained", "rowsA", "rowsB"] as const) this[k].merge(o[k]);
    this.multi += o.multi;
    this.foreign += o.foreign;
    this.inMemory += o.inMemory;
  }
}

/** One checkpoint, for one page size. */
export interface CheckpointStats {
  version: number;
  keys: number;
  L: number;
  pages: number;
  spine: number;
  leavesMin: number;
  leavesMax: number;
  bytesMean: number;
  bytesMax: number;
  over4000: number;
  over8000: number;
  /** Depth above which today's layout is taken as resident: the top levels, as many nodes as the spine at most. */
  residentDepth: number;
  /** Since the checkpoint before (undefined at the first): changes, pages written, today's branch rows written. */
  changes: number;
  dirtyPages: number | undefined;
  dirtyBranches: number | undefined;
}

/**
 * The tree as `Tree.memory()` builds it (the same Mutator over a node table in memory), with the counters: the last
 * checkpoint's tree stays whole (its orphans wait for the next checkpoint), so an id of a node of version ≤ the
 * checkpoint still names that node, and its page is looked up in maps rebuilt at each checkpoint. Orphans newer
 * than the checkpoint are freed at once (they are in no stored page), and their ids reused.
 */
export class PageProbe {
  readonly t = new RecordingTable({ capacity: 1 << 16 });
  private readonly src: NodeSource = memorySource(this.t);
  private readonly mut = new Mutator(1, this.src);
  private root = NONE;
  /** The last committed version, and the last checkpoint (0: none, nothing stored yet, nothing counted). */
  version = 0;
  private checkpointed = 0;
  private changesSince = 0;
  /** Orphans of version ≤ the checkpoint: its tree holds them. */
  private held: number[] = [];
  private maps: PageMap[] = [];
  /** By node id: depth in the checkpoint tree; bit j set once today's row was read (page size j) since it. */
  private depthOf = new Uint8Array(0);
  private rowRead = new Uint8Array(0);
  private nodeStamp = new Int32Array(0);
  private resident: number[] = [];
  /** By page size, by page: read since the checkpoint; stamped with the change that read (opened / obtained) it. */
  private pageRead: Uint8Array[] = [];
  private pageStamp: Int32Array[] = [];
  private obtainStamp: Int32Array[] = [];
  private change = 0;
  private readonly stored: number[] = [];
  /** By page size, by kind. */
  readonly counts: ChangeCounts[][];
  /** By page size, every checkpoint. */
  readonly checkpoints: CheckpointStats[][];
  /** Stored nodes opened while hashing: none, if the spine and pages hold every child's hash (checked). */
  hashOpens = 0;
  /** The last change's (a), (b) and today's (a) by page size (for tests). */
  readonly last = { pagesA: [] as number[], pagesB: [] as number[], rowsA: [] as number[], foreign: [] as boolean[] };

  constructor(
    readonly sizes: readonly number[],
    private readonly interval: number,
  ) {
    this.counts = sizes.map(() => KINDS.map(() => new ChangeCounts()));
    this.checkpoints = sizes.map(() => []);
  }

  /** Keys in the working tree. */
  get keys(): number {
    return this.root === NONE ? 0 : this.t.size(this.root);
  }

  /** The working tree's root hash. */
  hash(): Uint8Array {
    return digestBytes(rootDigest(this.src, this.root));
  }

  /** The working tree's root and the resident depths, by page size (for tests). */
  get state(): { root: number; resident: readonly number[]; maps: readonly PageMap[] } {
    return { root: this.root, resident: this.resident, maps: this.maps };
  }

  set(key: ByteString, value: Uint8Array): void {
    const leaf = this.t.leaf(key, value, this.mut.version);
    const counting = this.checkpointed > 0;
    if (counting) this.t.start(leaf);
    this.root = this.mut.setLeaf(this.root, leaf);
    if (counting) this.counted(this.mut.updated ? 0 : 1);
  }

  /** Removes `key`; true when it was there. */
  remove(key: ByteString): boolean {
    const counting = this.checkpointed > 0;
    if (counting) this.t.start(NONE);
    this.root = this.mut.remove(this.root, key);
    if (!this.mut.found) {
      this.t.stop();
      return false;
    }
    if (counting) this.counted(2);
    return true;
  }

  /** Commits the working version; a checkpoint follows every `interval` versions after the last. */
  commit(): void {
    if (this.root !== NONE) hashNode(this.src, this.root);
    const t = this.t;
    for (const n of this.mut.takeOrphans()) {
      if (t.version(n) > this.checkpointed) t.retire(n);
      else this.held.push(n);
    }
    this.version = this.mut.version++;
    if (this.version - this.checkpointed >= this.interval) this.checkpoint();
  }

  /** Makes the last committed version the checkpoint (as a clean close does), unless it is already. */
  checkpoint(): void {
    if (this.checkpointed === this.version) return;
    const t = this.t;
    const pre = preorder(t, this.root);
    const prev = this.checkpointed;
    const first = prev === 0;
    let dirtyBranches = 0;
    const atDepth: number[] = [];
    const depthOf = new Uint8Array(pre.maxId + 1);
    for (let i = 0; i < pre.ids.length; i++) {
      const n = pre.ids[i]!;
      const d = pre.depth[i]!;
      depthOf[n] = d;
      atDepth[d] = (atDepth[d] ?? 0) + 1;
      if (t.height(n) > 0 && t.version(n) > prev) dirtyBranches++;
    }
    const maps = this.sizes.map((L) => mapPages(t, pre, L));
    this.resident = maps.map((m) => {
      let d = 0;
      for (let above = 0; d < atDepth.length && above + atDepth[d]! <= m.spine; d++) above += atDepth[d]!;
      return d;
    });
    maps.forEach((m, j) => {
      const old = this.maps[j];
      let dirtyPages = 0;
      let [min, max, bytes, bytesMax, over4000, over8000] = [Infinity, 0, 0, 0, 0, 0];
      for (let p = 0; p < m.roots.length; p++) {
        const r = m.roots[p]!;
        // A page is rewritten unless its root, a node of the checkpoint before, was a page root there (nodes are
        // immutable: the same root is the same subtree).
        const kept = !first && old !== undefined && t.version(r) <= prev && old.pageOf[r]! >= 0 && old.roots[old.pageOf[r]!] === r;
        if (!kept) dirtyPages++;
        const s = m.leaves[p]!;
        const b = pageBytes(s);
        [min, max, bytes, bytesMax] = [Math.min(min, s), Math.max(max, s), bytes + b, Math.max(bytesMax, b)];
        if (b > 4000) over4000++;
        if (b > 8000) over8000++;
      }
      const pages = m.roots.length;
      this.checkpoints[j]!.push({
        version: this.version, keys: this.keys, L: m.L, pages, spine: m.spine, leavesMin: min, leavesMax: max,
        bytesMean: bytes / pages, bytesMax, over4000, over8000, residentDepth: this.resident[j]!, changes: this.changesSince,
        dirtyPages: first ? undefined : dirtyPages, dirtyBranches: first ? undefined : dirtyBranches,
      });
    });
    for (const n of this.held) t.retire(n);
    this.held = [];
    this.maps = maps;
    this.depthOf = depthOf;
    this.rowRead = new Uint8Array(pre.maxId + 1);
    this.nodeStamp = new Int32Array(pre.maxId + 1);
    this.pageRead = maps.map((m) => new Uint8Array(m.roots.length));
    this.pageStamp = maps.map((m) => new Int32Array(m.roots.length));
    this.obtainStamp = maps.map((m) => new Int32Array(m.roots.length));
    this.checkpointed = this.version;
    this.changesSince = 0;
  }

  /** Hashes the change's path (recorded: the siblings today's layout reads for it), then counts what it read. */
  private counted(kind: Kind): void {
    const t = this.t;
    t.hashing();
    if (this.root !== NONE) hashNode(this.src, this.root);
    t.stop();
    this.changesSince++;
    const c = ++this.change;
    const stored = this.stored;
    stored.length = 0;
    for (const code of t.touches) if (t.version(code >>> 3) <= this.checkpointed) stored.push(code);
    const sizes = this.sizes.length;
    const rowsA = new Array<number>(sizes).fill(0);
    const rowsB = new Array<number>(sizes).fill(0);
    for (const code of stored) {
      const n = code >>> 3;
      if (this.nodeStamp[n] === c) continue;
      this.nodeStamp[n] = c;
      const d = this.depthOf[n]!;
      for (let j = 0; j < sizes; j++) {
        if (d < this.resident[j]!) continue;
        rowsA[j]!++;
        if ((this.rowRead[n]! & (1 << j)) === 0) this.rowRead[n]! |= 1 << j, rowsB[j]!++;
      }
    }
    for (let j = 0; j < sizes; j++) {
      const m = this.maps[j]!;
      const [stamp, obtained, read] = [this.pageStamp[j]!, this.obtainStamp[j]!, this.pageRead[j]!];
      let [a, b, sqA, sqB, obt, home, foreign] = [0, 0, 0, 0, 0, -1, false];
      for (const code of stored) {
        const n = code >>> 3;
        const f = code & 7;
        const p = m.pageOf[n]!;
        if (p === UNMAPPED) throw new Error(`bench: stored node ${n} is not in the checkpoint's tree`);
        if (p === SPINE) continue;
        if (obtained[p] !== c) obtained[p] = c, obt++;
        if ((f & OPENED) === 0) continue;
        if (stamp[p] !== c) {
          stamp[p] = c;
          const sq = sqlitePages(pageBytes(m.leaves[p]!));
          a++, sqA += sq;
          if (read[p] === 0) read[p] = 1, b++, sqB += sq;
        }
        if ((f & (ASCENT | HASHING)) === 0) {
          if (home === -1) home = p;
          else if (home !== p) throw new Error("bench: a descent crossed from one page into another");
        } else if ((f & HASHING) !== 0) this.hashOpens++;
        else if (p !== home) foreign = true;
      }
      const k = this.counts[j]![kind]!;
      k.pagesA.add(a), k.pagesB.add(b), k.sqliteA.add(sqA), k.sqliteB.add(sqB), k.pagesObtained.add(obt);
      k.rowsA.add(rowsA[j]!), k.rowsB.add(rowsB[j]!);
      if (a > 1) k.multi++;
      if (foreign) k.foreign++;
      if (home === -1) k.inMemory++;
      else k.coldPages.add(a), k.coldSqlite.add(sqA), k.coldRows.add(rowsA[j]!);
      [this.last.pagesA[j], this.last.pagesB[j], this.last.rowsA[j], this.last.foreign[j]] = [a, b, rowsA[j]!, foreign];
    }
  }
}
