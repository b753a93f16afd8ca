/**
 * The working set's memory budget: an estimate of the nodes resident, and the eviction that brings them back under
 * the budget once a version is on disk (evicted nodes are loaded back from it).
 * @module
 */
import { NONE, type NodeTable } from "../../tree/node.js";
import { evictPages } from "../node-loader.js";

/**
 * Memory a resident node costs, to turn the memory budget into a node count: its record and node keys in the node
 * table, its share of a key string (shared by the branch that names its leaf), two array slots, and the table's room
 * to grow (up to half its size again). ARCHITECTURE.md has the measured parts.
 */
const NODE_BYTES = 200;

/** The nodes a writer's tree may keep resident. */
export class MemoryBudget {
  private readonly budgetNodes: number;
  /** Unknown at open (after a replay): the first commit sweeps. */
  private resident: number;
  /** Keys in the tree at the last commit. */
  private size: number;

  constructor(budgetMiB: number, size: number) {
    this.budgetNodes = Math.floor((budgetMiB * 1024 * 1024) / NODE_BYTES);
    this.resident = this.budgetNodes;
    this.size = size;
  }

  /**
   * After a commit of `root` that loaded `loads` evicted nodes: a path copy replaces nodes one for one (the old ones
   * are garbage once no view holds them), so the tree gains resident nodes by loading evicted ones and by growing, a
   * leaf and a branch per new key. True when over the budget, counting `held` nodes that are in no tree.
   */
  committed(t: NodeTable, root: number, loads: number, held: number): boolean {
    const size = root === NONE ? 0 : t.size(root);
    this.resident += loads + 2 * Math.max(0, size - this.size);
    this.size = size;
    return this.resident + held > this.budgetNodes;
  }

  /** True when `held` nodes outside the tree (a checkpoint's, see checkpoint-steps.ts) take a quarter of the budget. */
  tooManyHeld(held: number): boolean {
    return held > this.budgetNodes / 4;
  }

  /**
   * Evicts clean pages of `root` (whose version is on disk) until three quarters of the budget stay resident, `held`
   * nodes outside the tree counted, the spine and the pages being changed always among them (node-loader.ts,
   * evictPages). True when the dirty nodes alone take half the budget: the next commit should checkpoint, so that they
   * can be evicted.
   */
  evict(t: NodeTable, root: number, held: number): boolean {
    const { resident, dirty } = evictPages(t, root, Math.max(0, this.budgetNodes * 0.75 - held));
    this.resident = resident;
    return dirty > this.budgetNodes / 2;
  }
}
