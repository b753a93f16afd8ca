import { describe, expect, it } from "vitest";
import { latin1Bytes } from "../src/base/bytes.js";
import { pageSeq, PAGE_LEAVES } from "../src/sqlite/shards.js";
import { MemoryBudget } from "../src/store/write/memory-budget.js";
import { NodeTable } from "../src/tree/node-table.js";

/** MiB that make a budget of `nodes` nodes (200 bytes a node). */
const mibFor = (nodes: number): number => (nodes * 200) / 2 ** 20;

/**
 * A perfect tree of 1,024 leaves, stored as a layout-3 store holds it: its 63 spine nodes stored as branch rows, its
 * 64 pages of 16 leaves (31 nodes each) stored but for the first `dirty`, whose roots are unsaved.
 */
function tree(dirty: number): { t: NodeTable; root: number } {
  const t = new NodeTable({ stored: true });
  let page = 0;
  let seq = 0;
  const build = (lo: number, n: number): number => {
    if (n === 1) return t.leaf(`k${String(lo).padStart(4, "0")}`, undefined, 1);
    const left = build(lo, n / 2);
    const right = build(lo + n / 2, n / 2);
    const b = t.keyedBranch(latin1Bytes(`k${String(lo + n / 2).padStart(4, "0")}`), 1, Math.log2(n), n);
    t.setLeft(b, left);
    t.setRight(b, right);
    if (n > PAGE_LEAVES) t.setSeq(b, ++seq);
    else if (n === PAGE_LEAVES && page++ >= dirty) t.setSeq(b, pageSeq(page, 0));
    return b;
  };
  return { t, root: build(0, 1024) };
}

describe("MemoryBudget.evict", () => {
  it("evicts the clean pages below their roots, and keeps the spine and the dirty pages", () => {
    const { t, root } = tree(2);
    new MemoryBudget(mibFor(200), 1024).evict(t, root, 0);
    // 63 spine nodes, 62 clean page roots, 2 dirty pages of 31 nodes.
    expect(t.live).toBe(63 + 62 + 2 * 31);
  });

  it("asks for a checkpoint in the next commit when the dirty pages keep what stays over the budget, though they are under half of it", () => {
    // 187 nodes stay, 62 of them dirty: under half of 160, over an eighth.
    const { t, root } = tree(2);
    expect(new MemoryBudget(mibFor(160), 1024).evict(t, root, 0)).toBe("now");
  });

  it("does not ask when what stays fits the budget, or when no dirty page is there to store", () => {
    const two = tree(2);
    expect(new MemoryBudget(mibFor(200), 1024).evict(two.t, two.root, 0)).toBe("no");
    // The spine and the page roots alone (127) are over a budget of 100: a checkpoint would free nothing.
    const none = tree(0);
    expect(new MemoryBudget(mibFor(100), 1024).evict(none.t, none.root, 0)).toBe("no");
    expect(none.t.live).toBe(63 + 64);
  });

  it("asks for one that may be spread over commits when the dirty nodes alone take half the budget", () => {
    const { t, root } = tree(8); // 248 dirty, 119 spine nodes and clean roots: under the budget
    expect(new MemoryBudget(mibFor(480), 1024).evict(t, root, 0)).toBe("soon");
  });
});
