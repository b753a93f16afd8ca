/**
 * The working set's memory budget: an estimate of the nodes resident, and the eviction that brings them back under
 * the budget once a version is on disk (evicted nodes are loaded back from it).
 * @module
 */
import { NONE, type NodeTable } from "../../tree/node.js";
import { evictPages } from "../node-loader.js";

/**
 * Memory a resident node costs, to turn the memory budget into a node count: its record, node keys, stubs and key
 * reference in the node table (120 bytes), its share of the key arena (a leaf's key is shared by the branch that
 * names it), and the table's room to grow. ARCHITECTURE.md has the measured parts.
 */
const NODE_BYTES = 200;

/** Nodes a stored page holds on average (11 leaves and their 10 branches, measured at 1M keys: ARCHITECTURE.md). */
const PAGE_NODES = 21;

/**
 * An eviction that could not reach its target walks again only once the nodes that became evictable since (pages
 * loaded, or written by a checkpoint) are this share of what it walked: see {@link MemoryBudget.committed}.
 */
const WALK_SHARE = 1 / 8;

/** The nodes a writer's tree may keep resident. */
export class MemoryBudget {
  private readonly budgetNodes: number;
  /** Unknown at open (after a replay): the first commit sweeps. */
  private resident: number;
  /** Keys in the tree at the last commit. */
  private size: number;
  /** What the last eviction walked, whether it reached its target, and the nodes that became evictable since. */
  private walked = 0;
  private reached = true;
  private evictable = 0;

  constructor(budgetMiB: number, size: number) {
    this.budgetNodes = Math.floor((budgetMiB * 1024 * 1024) / NODE_BYTES);
    this.resident = this.budgetNodes;
    this.size = size;
  }

  /**
   * After a commit of `root` that loaded `loads` evicted nodes and whose checkpoint step wrote `pages` pages: a path
   * copy replaces nodes one for one (the old ones are garbage once no view holds them), so the tree gains resident
   * nodes by loading evicted ones and by growing, a leaf and a branch per new key. True when over the budget, counting
   * `held` nodes that are in no tree, and an eviction is worth its walk: where the spine and the pages being changed
   * fill the budget (10M keys at 512 MiB: ~1.8M spine nodes and page roots of ~2.7M), each eviction walks them all to
   * free what the last version loaded, so after one that could not reach its target the next waits until the nodes
   * that became evictable are {@link WALK_SHARE} of that walk (the memory over the budget meanwhile is at most that).
   */
  committed(t: NodeTable, root: number, loads: number, held: number, pages: number): boolean {
    const size = root === NONE ? 0 : t.size(root);
    this.resident += loads + 2 * Math.max(0, size - this.size);
    this.size = size;
    this.evictable += loads + pages * PAGE_NODES;
    return this.resident + held > this.budgetNodes && (this.reached || this.evictable >= this.walked * WALK_SHARE);
  }

  /**
   * True when the spine of a tree of `size` keys, with a stub for each page root below it, fits in what eviction
   * keeps (three quarters of the budget): ~0.18 records a key (a page per 11 leaves, measured at 1M keys; a spine node
   * and a stub each). Changes would load it all in time anyway, a row at a time, since eviction keeps the spine.
   */
  holdsSpine(size: number): boolean {
    return 0.18 * size <= this.budgetNodes * 0.75;
  }

  /** `nodes` spine nodes and their stubs came into memory outside a change (a warming of the spine after a reopen). */
  warmed(nodes: number): void {
    this.resident += nodes;
  }

  /** True when `held` nodes outside the tree (a checkpoint's, see checkpoint-steps.ts) take a quarter of the budget. */
  tooManyHeld(held: number): boolean {
    return held > this.budgetNodes / 4;
  }

  /**
   * Evicts clean pages of `root` (whose version is on disk) until three quarters of the budget stay resident, `held`
   * nodes outside the tree counted, the spine and the pages being changed always among them (node-loader.ts,
   * evictPages). Says whether the next commit should checkpoint, so that the dirty nodes can be evicted: "soon" when
   * they alone take half the budget; "now" (in that commit, not spread over several) when they keep what stays over the
   * whole budget and are an eighth of it. Where the spine fills most of the budget (10M keys at 512 MiB) the first
   * alone let a growing tree reach 1.45 times the budget's nodes between checkpoints; the eighth keeps a spine larger
   * than the budget from asking at every commit.
   */
  evict(t: NodeTable, root: number, held: number): "no" | "soon" | "now" {
    const target = Math.max(0, this.budgetNodes * 0.75 - held);
    const { resident, dirty, walked } = evictPages(t, root, target);
    this.resident = resident;
    [this.walked, this.reached, this.evictable] = [walked, resident <= target, 0];
    const b = this.budgetNodes;
    if (resident + held > b && dirty > b / 8) return "now";
    return dirty > b / 2 ? "soon" : "no";
  }
}
