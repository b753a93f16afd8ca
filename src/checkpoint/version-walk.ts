/**
 * The walk of one stored version's tree in post-order, as an export or an audit needs it, with storage read in
 * batches instead of a lookup per node: a subtree's branches level by level, each level one query in storage order,
 * and each batch's leaves rows in one query in id order. Memory stays bounded by one prefetched subtree and one batch,
 * however large the tree.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { latin1Bytes } from "../base/bytes.js";
import { toDigest } from "../base/hash.js";
import type { StoredNode } from "../tree/audit.js";
import { childRef, type Node, type NodeKey } from "../tree/node.js";
import type { StoreReader } from "../sqlite/store-reader.js";
import type { LeafSource } from "./leaf-stream.js";
import { branchNode, leafRowId, leafStub, linkNode } from "./node-rows.js";

/** Levels of branches loaded at once below a node whose children are not in memory (up to 2^10 − 1 branches). */
const SUBTREE_LEVELS = 10;

/** Branches loaded ahead of the walk, by node key. */
class Prefetched {
  private readonly byVersion = new Map<number, Map<number, Node>>();

  take(ref: NodeKey): Node | undefined {
    const m = this.byVersion.get(ref.version);
    const n = m?.get(ref.seq);
    if (n !== undefined) {
      m!.delete(ref.seq);
      if (m!.size === 0) this.byVersion.delete(ref.version);
    }
    return n;
  }

  put(n: Node): void {
    let m = this.byVersion.get(n.version);
    if (m === undefined) this.byVersion.set(n.version, (m = new Map()));
    m.set(n.seq, n);
  }
}

/**
 * Yields the nodes of the tree under `root` in post-order, each with the hash stored for it, in batches of `batch`
 * nodes; `read` runs each batch's reads (and may check afterwards that the version is still whole). Leaves carry
 * their key and value from their rows, which `leaves` gives in key order (the leaves' order in the walk); with
 * `withHashes` their stored hash too (for an audit).
 */
export function* walkVersion(
  root: Node | undefined,
  store: StoreReader,
  leaves: LeafSource,
  read: <T>(fn: () => T) => T,
  withHashes: boolean,
  batch = 1024,
): Generator<StoredNode[]> {
  if (root === undefined) return;
  const ahead = new Prefetched();

  /** Loads the branches below `from` (whose children are only known by key) SUBTREE_LEVELS deep. */
  const prefetch = (from: Node): void => {
    let level: Array<readonly [number, number]> = [];
    const refs = (n: Node): void => {
      if (n.leftSeq > 0) level.push([n.leftVersion, n.leftSeq]);
      if (n.rightSeq > 0) level.push([n.rightVersion, n.rightSeq]);
    };
    refs(from);
    for (let depth = 0; depth < SUBTREE_LEVELS && level.length > 0; depth++) {
      const rows = withHashes ? store.branches(level).map(branchNode) : store.branchLinks(level).map(linkNode);
      if (rows.length !== level.length) throw new IavlError("CORRUPT", `${level.length - rows.length} branches below ${from.version}/${from.seq} are missing from the store`);
      level = [];
      for (const n of rows) {
        ahead.put(n);
        if (depth + 1 < SUBTREE_LEVELS) refs(n);
      }
    }
  };

  const child = (parent: Node, side: "left" | "right"): Node => {
    const inMemory = parent[side];
    if (inMemory !== undefined) return inMemory;
    const ref = childRef(parent, side === "left");
    if (ref === undefined) throw new IavlError("CORRUPT", `node ${parent.version}/${parent.seq} has a child neither in memory nor in storage`);
    if (ref.seq < 0) {
      return leafStub(ref); // its row is read with its batch's
    }
    let n = ahead.take(ref);
    if (n === undefined) {
      prefetch(parent);
      n = ahead.take(ref);
      if (n === undefined) throw new IavlError("CORRUPT", `node ${ref.version}/${ref.seq} is missing from the store`);
    }
    return n;
  };

  // Parallel stacks: a node, and whether its children were already pushed (so its turn comes after theirs).
  const nodes: Node[] = [root];
  const expanded: boolean[] = [false];
  // For each finished subtree whose parent is not yet out: its first key and its height. An export reads only the
  // links of stored branches (their key, hash, height and size are most of a row's cost) and derives key and height
  // from these; an audit reads and checks what is stored.
  const firstKeys: Uint8Array[] = [];
  const heights: number[] = [];
  while (nodes.length > 0) {
    const out = read(() => {
      const got: Node[] = [];
      while (nodes.length > 0 && got.length < batch) {
        const top = nodes.length - 1;
        const n = nodes[top]!;
        if (n.height === 0 || expanded[top] === true) {
          nodes.pop();
          expanded.pop();
          got.push(n);
        } else {
          expanded[top] = true;
          // Right first, so that the left subtree is on top and comes out first.
          nodes.push(child(n, "right"), child(n, "left"));
          expanded.push(false, false);
        }
      }
      return got.map((n): StoredNode => {
        if (n.height > 0) {
          const heightRight = heights.pop()!;
          const height = 1 + Math.max(heights.pop()!, heightRight);
          heights.push(height);
          // The key of a branch is the first key of its right subtree; the left subtree's first key is now ours.
          const key = firstKeys.pop()!;
          if (withHashes) return { node: { key: latin1Bytes(n.key), version: n.version, height: n.height }, storedHash: n.hash };
          return { node: { key, version: n.version, height }, storedHash: undefined };
        }
        // The leaves rows of the version and the tree's leaves must be the same, in the same (key) order.
        const row = leaves.next();
        if (row === undefined || row.id !== leafRowId(n.seq) || row.version !== n.version || row.hash === null || row.value === null) {
          throw new IavlError("CORRUPT", `the leaves of version ${n.version === row?.version ? n.version : "?"} disagree with the tree at leaf ${n.version}/${n.seq}`);
        }
        firstKeys.push(row.key);
        heights.push(0);
        return { node: { key: row.key, value: row.value, version: n.version, height: 0 }, storedHash: withHashes ? toDigest(row.hash) : undefined };
      });
    });
    yield out;
  }
}
