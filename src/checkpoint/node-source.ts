/**
 * The working set's link to storage: children that are not in memory are loaded on first touch, and clean
 * subtrees are evicted again to keep memory within budget.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { sha256, type Digest } from "../base/hash.js";
import type { Node, NodeSource } from "../tree/node.js";
import type { StoreReader } from "../sqlite/store-reader.js";
import type { VersionRow } from "../sqlite/rows.js";
import { branchNode, leafNode, leafRowId, memorySeq } from "./node-rows.js";

/** A {@link NodeSource} over a store, counting loads so that the owner knows when to evict. */
export class StoreSource implements NodeSource {
  /** Nodes loaded since the counter was last reset. */
  loads = 0;

  constructor(private readonly store: StoreReader) {}

  left(node: Node): Node {
    let c = node.left;
    if (c === undefined) {
      c = this.load(node.leftVersion, node.leftSeq, node);
      node.left = c;
    }
    return c;
  }

  right(node: Node): Node {
    let c = node.right;
    if (c === undefined) {
      c = this.load(node.rightVersion, node.rightSeq, node);
      node.right = c;
    }
    return c;
  }

  valueHash(leaf: Node): Digest {
    // Only leaves of the working version lack a stored hash, and they still hold their value.
    if (leaf.value === undefined) throw new IavlError("CORRUPT", "a leaf has neither a hash nor a value");
    return sha256(leaf.value);
  }

  /** The root of a checkpointed version, or undefined for an empty tree. */
  root(row: Pick<VersionRow, "rootVersion" | "rootSeq">): Node | undefined {
    if (row.rootVersion === null || row.rootSeq === null) return undefined;
    return this.load(row.rootVersion, memorySeq(row.rootSeq));
  }

  /** Loads one node by its node key, `seq` in its in-memory form (0: the parent names no stored child). */
  load(version: number, seq: number, parent?: Node): Node {
    if (seq === 0) throw new IavlError("CORRUPT", `node ${parent?.version}/${parent?.seq} has a child neither in memory nor in storage`);
    this.loads++;
    if (seq < 0) {
      const leaf = this.store.leaf(version, leafRowId(seq));
      if (leaf !== undefined) return leafNode(leaf);
    } else {
      const branch = this.store.branch(version, seq);
      if (branch !== undefined) return branchNode(branch);
    }
    throw new IavlError("CORRUPT", `node ${version}/${seq} is missing from the store`);
  }
}

/**
 * Unlinks every clean (stored) node deeper than `keepDepth` from its parent, keeping only its node key, so that it
 * can be garbage-collected and loaded again when next needed. Dirty nodes are never evicted. Returns how many
 * nodes stay resident.
 */
export function evict(root: Node | undefined, keepDepth: number): number {
  if (root === undefined) return 0;
  let resident = 0;
  const stack: Array<[Node, number]> = [[root, 0]];
  while (stack.length > 0) {
    const [n, depth] = stack.pop()!;
    resident++;
    if (n.height === 0) continue;
    const l = n.left;
    const r = n.right;
    if (l !== undefined) {
      if (depth >= keepDepth && l.seq !== 0) {
        n.leftVersion = l.version;
        n.leftSeq = l.seq;
        n.left = undefined;
      } else stack.push([l, depth + 1]);
    }
    if (r !== undefined) {
      if (depth >= keepDepth && r.seq !== 0) {
        n.rightVersion = r.version;
        n.rightSeq = r.seq;
        n.right = undefined;
      } else stack.push([r, depth + 1]);
    }
  }
  return resident;
}
