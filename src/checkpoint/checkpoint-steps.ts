/**
 * A checkpoint written over several commits: its walk (dirty-branches.ts) goes a bounded number of rows per commit,
 * in that commit's transaction, and the last step marks its version a checkpoint. So a checkpoint no longer stalls
 * the one commit it falls on (seconds at a million keys, where a commit takes a fifth of one), and until it is whole,
 * readers and reopens replay from the checkpoint before, as they would after a crash.
 * @module
 */
import { NONE, type NodeSource } from "../tree/node.js";
import { storedSeq } from "../sqlite/node-rows.js";
import type { CheckpointMark } from "../sqlite/rows.js";
import { isPageSeq, pageOfSeq } from "../sqlite/shards.js";
import { DirtyWalk, storedAsPage, type CheckpointBatch } from "./dirty-branches.js";
import { HeldNodes } from "./held-nodes.js";

/** A checkpoint made whole: its version, and the node key of its root (none for an empty tree). */
export interface CheckpointDone {
  version: number;
  rootVersion: number | null;
  rootSeq: number | null;
}

/**
 * The mark of a checkpoint that ends after its own version's commit, which only a tree with a root does (an empty
 * tree's walk has nothing to spread; close() never checkpoints one).
 */
export function laterMark(done: CheckpointDone): CheckpointMark {
  if (done.rootVersion === null || done.rootSeq === null) throw new Error(`the checkpoint of version ${done.version} ended after its commit with no root`);
  return { version: done.version, rootVersion: done.rootVersion, rootSeq: done.rootSeq };
}

/** What one commit writes of a checkpoint. */
export interface CheckpointStep {
  batch: CheckpointBatch;
  /**
   * Node keys to add to the orphans of versions other than the commit's own: nodes a later version replaced before
   * the walk stored them, and, on the last step, the stored nodes the checkpoint moved into new pages (its version's).
   */
  orphans: Map<number, number[]>;
  /** Set on the step that ends the walk. */
  completes: CheckpointDone | undefined;
  /** Roots of pages written ahead of the walk: once the step lands, the held nodes below them are freed. */
  ahead: number[];
  /** Forgets the step: the walk goes back to where it was (and is dropped if it began with this step). */
  undo(): void;
}

/** The checkpoint being written, if any, of one writer's tree. */
export class CheckpointSteps {
  private walk: DirtyWalk | undefined;
  /** The first page id the walk used: pages from it on are its own. */
  private firstPage = 0;
  /**
   * Nodes of the walked tree the walk may still read that later versions replaced, each with the version that did,
   * and their in-memory children (held as well once a later version replaces them).
   */
  private readonly holding = new HeldNodes();
  /** Stored nodes the walk moved into new pages: orphans of its version, recorded when it ends. */
  private moved: number[] = [];
  /** Rows the walk wrote so far, and those of the last whole one (to size the next one's steps). */
  private rows = 0;
  /** Unknown until the first walk asks {@link storedRows}. */
  private lastRows: number | undefined;

  constructor(
    private readonly src: NodeSource,
    /** Commits a checkpoint's rows are spread over, when nothing asks for it sooner. */
    private readonly spreadOver: number,
    /**
     * The rows the store's last checkpoint wrote, as far as it tells, for a reopened writer's first walk: sized by
     * nothing, its steps were the fewest rows and its last step wrote the rest, 2.5 s at 1M keys. Asked then, not at
     * open, where the count's first read of an index cost ~20 ms at 1M keys.
     */
    private readonly storedRows: () => number = () => 0,
    /** The fewest rows a step writes: a small tree's checkpoint ends in a few commits. */
    private readonly minStepRows = 256,
  ) {}

  /** The version being made a checkpoint, if one is. */
  get pending(): number | undefined {
    return this.walk?.version;
  }

  /** Nodes in no tree kept in memory for the walk (see {@link retire}). */
  get held(): number {
    return this.holding.size;
  }

  /**
   * The checkpoint rows that commit `version` (whose tree is `root`) carries: a step of the open walk, or, when `due`
   * and none is open, the first of a new one over this version's tree (an empty tree's ends at once, with nothing to
   * write). The walk ends in this commit when `endsNow` says so, given the version the walk began at; page ids from
   * `firstPage`.
   */
  next(version: number, root: number, due: boolean, firstPage: number, endsNow: (from: number) => boolean): CheckpointStep | undefined {
    let began = false;
    if (this.walk === undefined) {
      if (!due) return undefined;
      this.walk = new DirtyWalk(this.src, root, version);
      this.holding.begin(version);
      this.firstPage = firstPage;
      began = true;
    }
    const walk = this.walk;
    try {
      const last = (this.lastRows ??= this.storedRows());
      const rows = endsNow(walk.version) ? Infinity : Math.max(this.minStepRows, Math.ceil(last / this.spreadOver));
      return this.stepOf(walk.step(rows, firstPage, (n) => this.holding.versionOf(n)), began);
    } catch (e) {
      if (began) this.drop();
      throw e;
    }
  }

  /** The rest of the open walk, at once (a close, a prune); undefined when none is open. */
  rest(firstPage: number): CheckpointStep | undefined {
    const walk = this.walk;
    if (walk === undefined) return undefined;
    return this.stepOf(walk.step(Infinity, firstPage, (n) => this.holding.versionOf(n)), false);
  }

  /** The commit (or checkpoint write) carrying `step` landed. */
  written(step: CheckpointStep): void {
    this.rows += step.batch.rows.count + step.batch.pages.count;
    for (const p of step.ahead) this.releaseBelow(p);
    this.moved.push(...step.batch.moved);
    if (step.completes === undefined) return;
    this.lastRows = this.rows;
    this.drop();
  }

  /**
   * Frees `nodes`, which version `version` replaced, but for those of the walked tree the walk may still read: they
   * are held until it ends, and recorded as that version's orphans if it stores them. A node that a held one names as
   * a child is held as well. Were it freed and named by node key instead, the walk would read its page into a second
   * set of nodes and renumber those, while the live tree kept the first set (the subtrees beside the changed path)
   * with the node keys of a page the walk may record as moved, which pruning then deletes.
   */
  retire(nodes: readonly number[], version: number): void {
    const walk = this.walk;
    const t = this.src.t;
    if (walk === undefined) {
      for (const n of nodes) t.retire(n);
      return;
    }
    const held = this.holding;
    const kept: number[] = [];
    const named: number[] = []; // replaced nodes a held node names: held too, and so on down
    for (const n of nodes) {
      if (this.mayRead(n, walk.version)) kept.push(n);
      else if (held.freeing(n)) named.push(n);
    }
    const hold = (n: number): void => {
      const branch = t.height(n) > 0;
      if (branch) t.ownKey(n); // the leaf whose key it shares may be freed
      held.hold(n, version, branch ? t.left(n) : NONE, branch ? t.right(n) : NONE, (c) => named.push(c));
    };
    for (const n of kept) hold(n);
    while (named.length > 0) {
      const c = named.pop()!;
      if (held.stillFreeing(c)) hold(c);
    }
    for (const n of nodes) if (held.stillFreeing(n)) t.retire(n);
  }

  /**
   * True when the walk of the tree of `version` may still read node `n`: a node of that tree not stored as a unit
   * of its own (unstored, or inside an older page) and not inside a page the walk wrote.
   */
  private mayRead(n: number, version: number): boolean {
    const t = this.src.t;
    if (t.version(n) > version || storedAsPage(t, n)) return false;
    const seq = t.seq(n);
    return !(isPageSeq(seq) && pageOfSeq(seq) >= this.firstPage);
  }

  /**
   * Frees the held nodes below page root `p`, which the walk wrote ahead and will not enter again. A held node's
   * parent in the walked tree is held too, so the search stops at nodes that are not. `p` itself stays: a held
   * spine node names it.
   */
  private releaseBelow(p: number): void {
    const t = this.src.t;
    const stack = [t.left(p), t.right(p)];
    while (stack.length > 0) {
      const n = stack.pop()!;
      if (n === NONE) continue;
      this.holding.unname(n); // the walk will not read it: it need not be held when replaced
      if (!this.holding.release(n)) continue;
      if (t.height(n) > 0) stack.push(t.left(n), t.right(n));
      t.retire(n);
    }
  }

  private stepOf(s: ReturnType<DirtyWalk["step"]>, began: boolean): CheckpointStep {
    const walk = this.walk!;
    const t = this.src.t;
    const orphans = s.late;
    let completes: CheckpointDone | undefined;
    if (walk.done) {
      const moved = [...this.moved, ...s.batch.moved];
      if (moved.length > 0) orphans.set(walk.version, [...(orphans.get(walk.version) ?? []), ...moved]);
      const empty = walk.root === NONE;
      completes = { version: walk.version, rootVersion: empty ? null : t.version(walk.root), rootSeq: empty ? null : storedSeq(t.seq(walk.root)) };
    }
    return {
      batch: s.batch,
      orphans,
      completes,
      ahead: s.ahead,
      undo: () => {
        s.batch.undo();
        if (began) this.drop();
      },
    };
  }

  private drop(): void {
    this.walk = undefined;
    const t = this.src.t;
    this.holding.clear((n) => t.retire(n));
    this.moved = [];
    this.rows = 0;
  }
}
