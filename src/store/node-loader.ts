/**
 * The working set's link to storage: children that are not in memory are loaded on first touch, and clean
 * subtrees are evicted again to keep memory within budget.
 * @module
 */
import { fromSqlite, IavlError } from "../base/errors.js";
import { sha256, type Digest } from "../base/hash.js";
import { NONE, NodeTable, type NodeSource } from "../tree/node.js";
import type { StoreReader } from "../sqlite/store-reader.js";
import type { BranchRow, VersionRow } from "../sqlite/rows.js";
import { branchNode, leafNode, leafRowId, memorySeq, pageNodes } from "../sqlite/node-rows.js";
import { isPageSeq, PAGE_LEAVES, pageOfSeq, slotOfSeq } from "../sqlite/shards.js";
import type { DecodedPage } from "../sqlite/page-codec.js";

/** Spine rows read in one query by {@link NodeLoader.warmSpine}. */
const WARM_BATCH = 4096;

/** A {@link NodeSource} over a store, with a node table of its own, counting loads so that the owner knows when to evict. */
export class NodeLoader implements NodeSource {
  readonly t = new NodeTable({ stored: true });
  readonly pageLeaves = PAGE_LEAVES;
  /** Nodes loaded since the counter was last reset. */
  loads = 0;
  /** SQLite rows read by loads (a page, a branch or a leaves row each), never reset: what the layout costs. */
  rowsRead = 0;

  constructor(private readonly store: StoreReader) {}

  left(n: number): number {
    const t = this.t;
    let c = t.left(n);
    if (c === NONE) {
      const seq = t.leftSeq(n);
      if (isPageSeq(seq)) return this.loadPage(n, true);
      c = this.load(t.leftVersion(n), seq, n);
      this.attach(n, true, c);
    }
    return c;
  }

  right(n: number): number {
    const t = this.t;
    let c = t.right(n);
    if (c === NONE) {
      const seq = t.rightSeq(n);
      if (isPageSeq(seq)) return this.loadPage(n, false);
      c = this.load(t.rightVersion(n), seq, n);
      this.attach(n, false, c);
    }
    return c;
  }

  /**
   * Links loaded child `c` into `n` on one side. Where `n` had a stub for it (its row's record of the child), the
   * child must match it: a stub that a damaged row gave, or a row that changed under its parent, is CORRUPT here
   * rather than a wrong hash built on it.
   */
  private attach(n: number, left: boolean, c: number): void {
    const t = this.t;
    const s = t.takeStub(n, left);
    if (s !== NONE) {
      const same = t.height(s) === t.height(c) && t.size(s) === t.size(c) && t.version(s) === t.version(c) && t.sameHash(s, c);
      t.retire(s);
      if (!same) {
        throw new IavlError("CORRUPT", `node ${t.version(c)}/${t.seq(c)} differs from what its parent ${t.version(n)}/${t.seq(n)} records of it`);
      }
    }
    if (left) t.setLeft(n, c);
    else t.setRight(n, c);
  }

  /**
   * Loads `n`'s child on one side from the page its link names, with one read: the child's subtree, and the other
   * child's when it is unloaded in the same page (a page root whose page was evicted), so that the sibling a rehash
   * or a rotation needs comes with it.
   */
  private loadPage(n: number, left: boolean): number {
    const t = this.t;
    const seq = left ? t.leftSeq(n) : t.rightSeq(n);
    const id = pageOfSeq(seq);
    const p = this.read(id, n);
    const other = left ? t.right(n) : t.left(n);
    const otherSeq = left ? t.rightSeq(n) : t.leftSeq(n);
    if (other === NONE && isPageSeq(otherSeq) && pageOfSeq(otherSeq) === id) this.attach(n, !left, this.materialize(id, p, otherSeq));
    const c = this.materialize(id, p, seq);
    this.attach(n, left, c);
    return c;
  }

  private read(id: number, parent?: number): DecodedPage {
    this.rowsRead++;
    const p = this.reading(() => this.store.pages.one(id));
    if (p === undefined) {
      const at = parent === undefined ? "a root" : `node ${this.t.version(parent)}/${this.t.seq(parent)}`;
      throw new IavlError("CORRUPT", `page ${id}, below ${at}, is missing from the store`);
    }
    return p;
  }

  private materialize(id: number, p: DecodedPage, seq: number): number {
    const at = p.count - 1 - slotOfSeq(seq);
    if (at < 0) throw new IavlError("CORRUPT", `page ${id} has no slot ${slotOfSeq(seq)}`);
    const before = this.t.live;
    const c = pageNodes(this.t, id, p, at);
    this.loads += this.t.live - before;
    return c;
  }

  /**
   * Loads the spine rows (branch rows) of the tree under `root` that are not in memory, up to `max` of them, in
   * batches of one query each: after a reopen a change past the budget would otherwise read the cold part of its
   * path's spine a row at a time (1.9 rows a change at 10M keys). One walk of the spine in memory, descending into what
   * each batch loaded; true when it found nothing more to load. The page roots stay in storage: the stubs of their
   * parents hold what a change beside them needs.
   */
  warmSpine(root: number, max: number): boolean {
    const t = this.t;
    if (root === NONE || t.height(root) === 0) return true;
    const stack = [root];
    let want: Array<[parent: number, left: boolean, version: number, seq: number]> = [];
    let read = 0;
    const cold = (n: number, left: boolean): void => {
      const c = left ? t.left(n) : t.right(n);
      if (c !== NONE) {
        if (t.size(c) > PAGE_LEAVES) stack.push(c);
        return;
      }
      const seq = left ? t.leftSeq(n) : t.rightSeq(n);
      const s = left ? t.leftStub(n) : t.rightStub(n);
      if (seq > 0 && !isPageSeq(seq) && (s === NONE || t.size(s) > PAGE_LEAVES)) want.push([n, left, left ? t.leftVersion(n) : t.rightVersion(n), seq]);
    };
    for (;;) {
      while (stack.length > 0 && want.length < WARM_BATCH) {
        const n = stack.pop()!;
        cold(n, true);
        cold(n, false);
      }
      if (want.length === 0) return true; // the walk ended with nothing cold left
      const rows = this.reading(() => this.store.branches.many(want.map((w) => [w[2], w[3]] as const)));
      const byKey = new Map<string, BranchRow>();
      for (const r of rows) byKey.set(`${r.version}/${r.seq}`, r);
      for (const [parent, left, version, seq] of want) {
        const row = byKey.get(`${version}/${seq}`);
        if (row === undefined) throw new IavlError("CORRUPT", `node ${version}/${seq} is missing from the store`);
        const c = branchNode(t, row);
        this.attach(parent, left, c);
        if (t.size(c) > PAGE_LEAVES) stack.push(c);
      }
      this.rowsRead += want.length;
      read += want.length;
      want = [];
      if (read >= max) return false;
    }
  }

  valueHash(leaf: number): Digest {
    // Only leaves of the working version lack a stored hash, and they still hold their value.
    const v = this.t.value(leaf);
    if (v === undefined) throw new IavlError("CORRUPT", "a leaf has neither a hash nor a value");
    return sha256(v);
  }

  /** The root of a checkpointed version, or {@link NONE} for an empty tree. */
  root(row: Pick<VersionRow, "rootVersion" | "rootSeq">): number {
    if (row.rootVersion === null || row.rootSeq === null) return NONE;
    const seq = memorySeq(row.rootSeq);
    if (isPageSeq(seq)) return this.materialize(pageOfSeq(seq), this.read(pageOfSeq(seq)), seq);
    return this.load(row.rootVersion, seq);
  }

  /** Runs a read of rows; SQLite's failures come out as the coded errors they mean, naming the file. */
  private reading<T>(fn: () => T): T {
    try {
      return fn();
    } catch (e) {
      throw fromSqlite(e, `${this.store.db.name}: loading tree nodes`);
    }
  }

  /** Loads one node by its node key, `seq` in its in-memory form (0: the parent names no stored child). */
  private load(version: number, seq: number, parent?: number): number {
    if (seq === 0) {
      const at = parent === undefined ? "a root" : `node ${this.t.version(parent)}/${this.t.seq(parent)}`;
      throw new IavlError("CORRUPT", `${at} has a child neither in memory nor in storage`);
    }
    this.loads++;
    this.rowsRead++;
    if (seq < 0) {
      const leaf = this.reading(() => this.store.leaves.leaf(version, leafRowId(seq)));
      if (leaf !== undefined) return leafNode(this.t, leaf);
    } else {
      const branch = this.reading(() => this.store.branches.one(version, seq));
      if (branch !== undefined) return branchNode(this.t, branch);
    }
    throw new IavlError("CORRUPT", `node ${version}/${seq} is missing from the store`);
  }
}

/**
 * What an eviction left: the resident nodes, and the dirty ones among them (spine branches and pages being changed);
 * and the nodes its walk visited (the spine and the page roots), what the next one will cost.
 */
export interface Evicted {
  resident: number;
  dirty: number;
  walked: number;
}

/** Reused by every eviction: the walk's stack, and the clean page roots it found with the nodes below each. */
let stack = new Int32Array(1024);
let clean = new Int32Array(2048);

/**
 * The nodes in memory of page-level subtree `n` (at most PAGE_LEAVES leaves): a page is loaded whole and a change in
 * it keeps it whole until the checkpoint writes it, so this counts 2 · size − 1 instead of walking it (walking the
 * pages being changed took most of an eviction's walk). Only a subtree made of pages merged by a removal, whose
 * clean page roots inside may have been evicted, is counted high; what it holds is dirty and stays either way.
 */
function residentPage(t: NodeTable, n: number): number {
  return t.height(n) > 0 && (t.left(n) !== NONE || t.right(n) !== NONE) ? 2 * t.size(n) - 1 : 1;
}

/**
 * Evicts whole pages (layout 3) until about `target` nodes of `root`'s tree stay resident: the spine (nodes of more
 * than PAGE_LEAVES leaves) always stays, and so does each page root, whose record holds the hash, height, size and key
 * a change beside it needs, so a change reads at most the one page it goes into. A page that is being changed (its
 * root dirty, or a stored node that must move into a page of its own at the next checkpoint) stays whole, for that
 * checkpoint writes it from memory. The clean pages to go are spread evenly over the tree: with random keys, no page
 * is likelier to be touched next than another. The walk visits the spine and the page roots only, in typed arrays.
 */
export function evictPages(t: NodeTable, root: number, target: number): Evicted {
  if (root === NONE) return { resident: 0, dirty: 0, walked: 0 };
  let walked = 0;
  let resident = 0;
  let dirty = 0;
  let cleanCount = 0;
  let evictable = 0;
  let top = 0;
  stack[top++] = root;
  while (top > 0) {
    const n = stack[--top]!;
    walked++;
    if (t.height(n) > 0) t.ownKey(n); // the leaf it names, deep in its right subtree, may be evicted
    if (t.size(n) > PAGE_LEAVES) {
      resident++;
      if (t.leftStub(n) !== NONE) resident++;
      if (t.rightStub(n) !== NONE) resident++;
      if (t.seq(n) === 0) dirty++;
      if (top + 2 > stack.length) stack = doubled(stack);
      const l = t.left(n);
      const r = t.right(n);
      if (l !== NONE) stack[top++] = l;
      if (r !== NONE) stack[top++] = r;
      continue;
    }
    const seq = t.seq(n);
    const here = residentPage(t, n);
    resident += here;
    if (seq === 0 || (isPageSeq(seq) && slotOfSeq(seq) !== 0)) dirty += here;
    else if (here > 1) {
      if (cleanCount + 2 > clean.length) clean = doubled(clean);
      clean[cleanCount++] = n;
      clean[cleanCount++] = here - 1;
      evictable += here - 1;
    }
  }
  const excess = resident - target;
  if (excess <= 0 || evictable === 0) return { resident, dirty, walked };
  const share = Math.min(1, excess / evictable);
  let owed = 0;
  for (let k = 0; k < cleanCount; k += 2) {
    owed += share;
    if (owed < 1) continue;
    owed -= 1;
    const n = clean[k]!;
    const l = t.left(n);
    const r = t.right(n);
    if (l !== NONE) {
      t.linkLeft(n, t.version(l), t.seq(l));
      t.retireTree(l);
    }
    if (r !== NONE) {
      t.linkRight(n, t.version(r), t.seq(r));
      t.retireTree(r);
    }
    resident -= clean[k + 1]!;
  }
  return { resident, dirty, walked };
}

/** `a` at twice its length, its contents kept. */
function doubled(a: Int32Array<ArrayBuffer>): Int32Array<ArrayBuffer> {
  const b = new Int32Array(a.length * 2);
  b.set(a);
  return b;
}
