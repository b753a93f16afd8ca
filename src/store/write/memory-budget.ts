/**
 * The working set's memory budget: an estimate of the nodes resident, and the eviction that brings them back under
 * the budget once a version is on disk (evicted nodes are loaded back from it).
 * @module
 */
import { NONE, type NodeTable } from "../../tree/node.js";
import { evict } from "../node-loader.js";

/**
 * Memory a resident node costs, to turn the memory budget into a node count: its record and node keys in the node
 * table, its share of a key string (shared by the branch that names its leaf), two array slots, and the table's room
 * to grow (up to half its size again). ARCHITECTURE.md has the measured parts.
 */
const NODE_BYTES = 200;

/** The nodes a writer's tree may keep resident. */
export class MemoryBudget {
  private readonly budgetNodes: number;
  /** The top levels kept whole: those that fit in half the budget; the other half is for dirty and loaded nodes. */
  private readonly keepDepth: number;
  /** Unknown at open (after a replay): the first commit sweeps. */
  private resident: number;
  /** Keys in the tree at the last commit. */
  private size: number;

  constructor(budgetMiB: number, size: number) {
    this.budgetNodes = Math.floor((budgetMiB * 1024 * 1024) / NODE_BYTES);
    // Depths 0..d hold 2^(d+1) − 1 nodes.
    this.keepDepth = Math.max(1, Math.floor(Math.log2(this.budgetNodes / 2)) - 1);
    this.resident = this.budgetNodes;
    this.size = size;
  }

  /**
   * After a commit of `root` that loaded `loads` evicted nodes: a path copy replaces nodes one for one (the old ones
   * are garbage once no view holds them), so the tree gains resident nodes by loading evicted ones and by growing, a
   * leaf and a branch per new key. True when over the budget.
   */
  committed(t: NodeTable, root: number, loads: number): boolean {
    const size = root === NONE ? 0 : t.size(root);
    this.resident += loads + 2 * Math.max(0, size - this.size);
    this.size = size;
    return this.resident > this.budgetNodes;
  }

  /**
   * Evicts the clean nodes below the kept levels of `root`, whose version is on disk. True when what stays is still
   * mostly dirty: the next commit should checkpoint, so that it can be evicted.
   */
  evict(t: NodeTable, root: number): boolean {
    this.resident = evict(t, root, this.keepDepth);
    return this.resident > this.budgetNodes * 0.75;
  }
}
