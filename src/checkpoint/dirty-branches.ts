/**
 * Checkpoints (layout 3): what a checkpoint writes. The nodes with more than PAGE_LEAVES leaves (the spine) not yet
 * stored become branch rows, each under a node key (version, sequence) given here; each canonical page (a subtree of
 * at most PAGE_LEAVES leaves under a spine node) whose root is not stored as a page root becomes one page row.
 * @module
 */
import { NONE, type NodeSource, type NodeTable } from "../tree/node.js";
import type { BranchRow, BranchRows, PageRows, PageWrite } from "../sqlite/rows.js";
import { branchRow, encodePage, numberPage } from "../sqlite/node-rows.js";
import { KIDS_BYTES } from "../sqlite/branch-kids.js";
import { NO_PAGES } from "../sqlite/page-rows.js";
import { isPageSeq, PAGE_LEAVES, slotOfSeq } from "../sqlite/shards.js";

/**
 * A step keeps the rows it numbered, up to this many bytes of them, for its write: encoding a page twice was ~5 % of
 * a 1M-key churn's main thread. Past it (a checkpoint written whole) rows are made again as they are written.
 */
const KEEP_PAGE_BYTES = 16 * 2 ** 20;

/** A write without branches. */
export const NO_BRANCHES: BranchRows = { count: 0, bytes: 0, *[Symbol.iterator](): Generator<BranchRow> {} };

/** The rows to write at a checkpoint, and how to undo their numbering if the write fails. */
export interface CheckpointBatch {
  /** The spine's rows, made as they are read (so only while the nodes' numbering stands). */
  rows: BranchRows;
  pages: PageRows;
  /**
   * Node keys `[version, seq, …]` of the stored nodes the checkpoint moved into new pages and whose rows no tree from
   * the checkpoint on reads: a page whose root moved.
   */
  moved: number[];
  /** The number of page ids used, from the `firstPage` given. */
  pagesUsed: number;
  /** Forgets the sequences given, so that a failed write leaves the nodes as they were. */
  undo(): void;
}

/** An empty batch. */
export const NO_CHECKPOINT: CheckpointBatch = { rows: NO_BRANCHES, pages: NO_PAGES, moved: [], pagesUsed: 0, undo: () => {} };

/**
 * True when `n` is stored as a unit of its own: a page's root, a leaf's row, or a spine node's branch row (whose
 * subtree is stored whole too). A node of a page below its root must move into a page of its own, should it become
 * a canonical page's root: pruning deletes a page once its root left the trees it keeps.
 */
export function storedAsPage(t: NodeTable, n: number): boolean {
  const seq = t.seq(n);
  return seq !== 0 && (!isPageSeq(seq) || slotOfSeq(seq) === 0);
}

/** Loads (through `src`) every node of the subtree under `n` that is not in memory. */
function loadAll(src: NodeSource, n: number): void {
  const t = src.t;
  const stack = [n];
  while (stack.length > 0) {
    const m = stack.pop()!;
    if (t.height(m) > 0) stack.push(src.left(m), src.right(m));
  }
}

/** One step of a {@link DirtyWalk}. */
export interface WalkStep {
  batch: CheckpointBatch;
  /**
   * Node keys numbered in this step of nodes a later version replaced before the walk reached them, by the version
   * that replaced them: what that version's orphans would have held, had they been stored then.
   */
  late: Map<number, number[]>;
  /** Roots of the pages written ahead of the walk because later versions replaced nodes in them. */
  ahead: number[];
}

/**
 * The walk of a checkpoint over the unstored nodes of one version's tree, in steps of a bounded number of rows, so
 * that a checkpoint can be written over several commits (the tree of `version` stays as it is meanwhile: later
 * versions copy the nodes they change, and the owner keeps replaced nodes from being freed). A stored spine node's
 * subtree is all stored, so the walk never enters one. A page's nodes must be in memory: those that are not (a clean
 * subtree whose page boundary moved) are loaded through `src`.
 */
export class DirtyWalk {
  /** Nodes still to visit, and whether each one's children were visited. */
  private stack: number[] = [];
  private childrenDone: boolean[] = [];
  /** The last sequence given per node version. */
  private next = new Map<number, number>();
  /** True while the root, a page of its own, is still to write. */
  private rootPage: boolean;

  constructor(
    private readonly src: NodeSource,
    readonly root: number,
    readonly version: number,
  ) {
    const t = src.t;
    const branch = root !== NONE && t.height(root) > 0;
    this.rootPage = branch && t.size(root) <= PAGE_LEAVES;
    if (branch && !this.rootPage && t.seq(root) === 0) this.stack.push(root), this.childrenDone.push(false);
  }

  /** True once every node is numbered and every page made. */
  get done(): boolean {
    return !this.rootPage && this.stack.length === 0;
  }

  /**
   * Numbers and encodes rows until about `maxRows` are made (branch rows and pages; a node's two child pages are made
   * together), page ids from `firstPage`. `replacedAt` names the version that replaced a node, if one did. The batch's
   * `undo` also puts the walk back where this step began.
   *
   * First, ahead of the walk's order, it writes every page a later version replaced a node of: its nodes then need
   * not stay in memory for the walk. Replaced nodes of the tree form its top (a version copies the whole path to
   * what it changes), so those pages are found below the replaced spine nodes alone.
   */
  step(maxRows: number, firstPage: number, replacedAt: (n: number) => number | undefined): WalkStep {
    const t = this.src.t;
    const numbered: number[] = [];
    const renumbered: number[] = []; // node, its sequence before, …
    const pages: number[] = []; // their roots
    const rowsOf: Array<Uint8Array | undefined> = []; // their rows, while a step's rows fit KEEP_PAGE_BYTES
    const moved: number[] = [];
    const late = new Map<number, number[]>();
    const ahead: number[] = [];
    let bytes = 0;
    let pageBytes = 0;
    const was = { stack: [...this.stack], childrenDone: [...this.childrenDone], next: new Map(this.next), rootPage: this.rootPage };
    const undo = (): void => {
      for (const n of numbered) t.setSeq(n, 0);
      for (let k = renumbered.length - 2; k >= 0; k -= 2) t.setSeq(renumbered[k]!, renumbered[k + 1]!);
      this.stack = was.stack;
      this.childrenDone = was.childrenDone;
      this.next = was.next;
      this.rootPage = was.rootPage;
    };
    const replaced = (n: number): void => {
      const at = replacedAt(n);
      if (at === undefined) return;
      const keys = late.get(at) ?? [];
      keys.push(t.version(n), t.seq(n));
      late.set(at, keys);
    };
    const onMove = (n: number, seq: number): void => {
      renumbered.push(n, seq);
      if (seq === 0) return;
      // A page's root leaving it ends the page's life in the trees from here on; its other nodes went with the root.
      if (!isPageSeq(seq) || slotOfSeq(seq) === 0) moved.push(t.version(n), seq);
    };
    const page = (n: number): void => {
      if (storedAsPage(t, n)) return;
      loadAll(this.src, n);
      const row = numberPage(t, n, firstPage + pages.length, pageBytes < KEEP_PAGE_BYTES, onMove);
      pageBytes += typeof row === "number" ? row : row.length;
      pages.push(n);
      rowsOf.push(typeof row === "number" ? undefined : row);
      replaced(n);
    };
    try {
      if (this.rootPage) {
        page(this.root);
        this.rootPage = false;
      } else if (this.root !== NONE && replacedAt(this.root) !== undefined) {
        const top = [this.root];
        while (top.length > 0) {
          const n = top.pop()!;
          for (const c of [t.left(n), t.right(n)]) {
            if (c === NONE || replacedAt(c) === undefined) continue;
            if (t.size(c) > PAGE_LEAVES) {
              if (t.seq(c) === 0) top.push(c); // a numbered spine node's subtree is stored
            } else if (!storedAsPage(t, c)) {
              page(c);
              ahead.push(c);
            }
          }
        }
      }
      const { stack, childrenDone } = this;
      while (stack.length > 0 && numbered.length + pages.length < maxRows) {
        const n = stack.pop()!;
        if (!childrenDone.pop()) {
          stack.push(n);
          childrenDone.push(true);
          for (const c of [t.right(n), t.left(n)]) {
            if (c === NONE) continue; // known by its node key: stored
            if (t.size(c) <= PAGE_LEAVES) page(c);
            else if (t.seq(c) === 0) stack.push(c), childrenDone.push(false);
          }
          continue;
        }
        const v = t.version(n);
        const seq = (this.next.get(v) ?? 0) + 1;
        this.next.set(v, seq);
        t.setSeq(n, seq);
        numbered.push(n);
        replaced(n);
        bytes += t.keyLength(n) + 32 + KIDS_BYTES; // a hash has 32
      }
    } catch (e) {
      undo();
      throw e;
    }
    const rows: BranchRows = {
      count: numbered.length,
      bytes,
      *[Symbol.iterator](): Generator<BranchRow> {
        for (const n of numbered) yield branchRow(t, n);
      },
    };
    const version = this.version;
    const pageRows: PageRows = {
      count: pages.length,
      bytes: pageBytes,
      *[Symbol.iterator](): Generator<PageWrite> {
        for (let k = 0; k < pages.length; k++) yield { id: firstPage + k, version, bytes: rowsOf[k] ?? encodePage(t, pages[k]!) };
      },
    };
    return { batch: { rows, pages: pageRows, moved, pagesUsed: pages.length, undo }, late, ahead };
  }
}
