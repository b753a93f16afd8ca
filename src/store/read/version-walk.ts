/**
 * The walk of one stored version's tree in post-order, as an export or an audit needs it, with storage read in
 * batches instead of a lookup per node: a subtree's branches level by level, each level one query in storage order,
 * and each batch's leaves rows in one query in id order. Memory stays bounded by one prefetched subtree and one batch,
 * however large the tree.
 * @module
 */
import { IavlError } from "../../base/errors.js";
import { toDigest } from "../../base/hash.js";
import type { StoredNode } from "../../tree/audit.js";
import { NONE, type NodeTable } from "../../tree/node.js";
import type { BranchLinks, BranchRow } from "../../sqlite/rows.js";
import type { StoreReader } from "../../sqlite/store-reader.js";
import { leafSource, type LeafSource } from "./leaf-stream.js";
import { pinnedWalk } from "../../tree/node-table.js";
import type { VersionTree } from "./rebuild.js";
import type { VersionRead } from "./version-read.js";
import { leafKeySeq, leafRowId, memorySeq, pageLink, pagedBranch, pagedSeq, type DecodedPage } from "../../sqlite/node-rows.js";

/** Levels of branches loaded at once below a node whose children are not in memory (up to 2^10 − 1 branches). */
const SUBTREE_LEVELS = 10;
/** Bytes of leaf keys and values after which a batch of the walk ends, whatever its count of nodes. */
const BATCH_BYTES = 1 << 18;

/**
 * A node of the walk: a node of the tree in memory (its id), a stored branch (its row: the links alone for an
 * export, the whole row for an audit), or a stored leaf known by its node key (its row comes with its batch's).
 */
type Item = number | BranchLinks | BranchRow | StoredLeaf | PagedBranch;

/** A branch of a page row (layout 3): the decoded page and its index there; its children are in the same page. */
interface PagedBranch {
  page: DecodedPage;
  id: number;
  at: number;
  version: number;
  seq: number;
}

/** Node `at` of page `id`: a paged branch, or a leaf known by its leaves row (its row comes with its batch's). */
function pagedItem(id: number, page: DecodedPage, at: number): PagedBranch | StoredLeaf {
  if (page.height[at] === 0) return { version: page.version[at]!, seq: leafKeySeq(page.leafId[at]!) };
  return { page, id, at, version: page.version[at]!, seq: pagedSeq(id, page, at) };
}

interface StoredLeaf {
  version: number;
  /** In its in-memory form: negative. */
  seq: number;
}

/** Branches loaded ahead of the walk, by node key. */
class Prefetched {
  private readonly byVersion = new Map<number, Map<number, BranchLinks>>();

  take(version: number, seq: number): BranchLinks | undefined {
    const m = this.byVersion.get(version);
    const b = m?.get(seq);
    if (b !== undefined) {
      m!.delete(seq);
      if (m!.size === 0) this.byVersion.delete(version);
    }
    return b;
  }

  put(b: BranchLinks): void {
    let m = this.byVersion.get(b.version);
    if (m === undefined) this.byVersion.set(b.version, (m = new Map()));
    m.set(b.seq, b);
  }
}

/**
 * Yields the nodes of the tree under `root` (a node of `t`) in post-order, each with the hash stored for it, in
 * batches of `batch` nodes; `read` runs each batch's reads (and may check afterwards that the version is still
 * whole). Leaves carry their key and value from their rows, which `leaves` gives in key order (the leaves' order in
 * the walk); with `withHashes` their stored hash too (for an audit). The caller keeps `t` pinned while the walk is
 * open.
 */
export function* walkVersion(
  t: NodeTable,
  root: number,
  store: StoreReader,
  leaves: LeafSource,
  read: <T>(fn: () => T) => T,
  withHashes: boolean,
  batch = 1024,
): Generator<StoredNode[]> {
  if (root === NONE) return;
  const ahead = new Prefetched();

  /** Loads the stored branches below `parent`, SUBTREE_LEVELS deep. */
  const prefetch = (parent: Item): void => {
    let level: Array<readonly [number, number]> = [];
    const refs = (b: BranchLinks): void => {
      if (b.leftSeq > 0 && pageLink(b.leftSeq) === undefined) level.push([b.leftVersion, b.leftSeq]);
      if (b.rightSeq > 0 && pageLink(b.rightSeq) === undefined) level.push([b.rightVersion, b.rightSeq]);
    };
    refs(links(parent));
    for (let depth = 0; depth < SUBTREE_LEVELS && level.length > 0; depth++) {
      const rows: BranchLinks[] = (withHashes ? store.branches.many(level) : store.branches.links(level)).map(inMemoryForm);
      if (rows.length !== level.length) throw new IavlError("CORRUPT", `${level.length - rows.length} branches below ${describe(parent)} are missing from the store`);
      level = [];
      for (const b of rows) {
        ahead.put(b);
        if (depth + 1 < SUBTREE_LEVELS) refs(b);
      }
    }
  };

  /**
   * The node keys of `item`'s children that are not in memory (in-memory form; seq 0 for a side in memory), for a
   * parent of either kind. A node in memory keeps stale links on a side whose child is in memory: they must not be read.
   */
  const links = (item: Item): BranchLinks => {
    if (typeof item !== "number") return item as BranchLinks;
    const stored = (c: number, seq: number): number => (c === NONE ? seq : 0);
    return {
      version: t.version(item),
      seq: t.seq(item),
      leftVersion: t.leftVersion(item),
      leftSeq: stored(t.left(item), t.leftSeq(item)),
      rightVersion: t.rightVersion(item),
      rightSeq: stored(t.right(item), t.rightSeq(item)),
    };
  };

  // The last page read: a page root's two children come from it.
  let lastPage: { id: number; page: DecodedPage } | undefined;
  const child = (parent: Item, left: boolean): Item => {
    if (typeof parent === "number") {
      const c = left ? t.left(parent) : t.right(parent);
      if (c !== NONE) return c;
    } else if ("page" in parent) return pagedItem(parent.id, parent.page, left ? parent.page.left[parent.at]! : parent.page.right[parent.at]!);
    const l = links(parent);
    const version = left ? l.leftVersion : l.rightVersion;
    const seq = left ? l.leftSeq : l.rightSeq;
    if (seq === 0) throw new IavlError("CORRUPT", `node ${describe(parent)} has a child neither in memory nor in storage`);
    if (seq < 0) return { version, seq };
    const link = pageLink(seq);
    if (link !== undefined) {
      const id = link.id;
      if (lastPage?.id !== id) {
        const page = store.pages.one(id);
        if (page === undefined) throw new IavlError("CORRUPT", `page ${id}, below node ${describe(parent)}, is missing from the store`);
        lastPage = { id, page };
      }
      return pagedItem(id, lastPage.page, lastPage.page.count - 1 - link.slot);
    }
    let b = ahead.take(version, seq);
    if (b === undefined) {
      prefetch(parent);
      b = ahead.take(version, seq);
      if (b === undefined) throw new IavlError("CORRUPT", `node ${version}/${seq} is missing from the store`);
    }
    return b;
  };

  const isLeaf = (item: Item): boolean => (typeof item === "number" ? t.height(item) === 0 : item.seq < 0);
  const describe = (item: Item): string => (typeof item === "number" ? `${t.version(item)}/${t.seq(item)}` : `${item.version}/${item.seq}`);

  // Parallel stacks: a node, and whether its children were already pushed (so its turn comes after theirs).
  const nodes: Item[] = [root];
  const expanded: boolean[] = [false];
  // For each finished subtree whose parent is not yet out: its first key and its height. An export reads only the
  // links of stored branches (their key and hash buffers are what a row costs) and derives key and height
  // from these; an audit reads and checks what is stored.
  const firstKeys: Uint8Array[] = [];
  const heights: number[] = [];
  while (nodes.length > 0) {
    const out = read(() => {
      const got: Item[] = [];
      // The leaves rows of the batch's leaves, in order: a batch also ends at BATCH_BYTES of keys and values, so that
      // one of large values is not held whole while its consumer waits (an export to a client that stopped reading).
      const rows: Array<ReturnType<LeafSource["next"]>> = [];
      let bytes = 0;
      while (nodes.length > 0 && got.length < batch && bytes < BATCH_BYTES) {
        const top = nodes.length - 1;
        const n = nodes[top]!;
        if (isLeaf(n) || expanded[top] === true) {
          nodes.pop();
          expanded.pop();
          got.push(n);
          if (isLeaf(n)) {
            const row = leaves.next();
            rows.push(row);
            bytes += (row?.key.length ?? 0) + (row?.value?.length ?? 0);
          }
        } else {
          expanded[top] = true;
          // Right first, so that the left subtree is on top and comes out first.
          nodes.push(child(n, false), child(n, true));
          expanded.push(false, false);
        }
      }
      let leaf = 0;
      return got.map((n): StoredNode => {
        const version = typeof n === "number" ? t.version(n) : n.version;
        if (!isLeaf(n)) {
          const heightRight = heights.pop()!;
          const height = 1 + Math.max(heights.pop()!, heightRight);
          heights.push(height);
          // The key of a branch is the first key of its right subtree; the left subtree's first key is now ours.
          const key = firstKeys.pop()!;
          if (!withHashes) return { node: { key, version, height }, storedHash: undefined };
          if (typeof n === "number") return { node: { key: t.keyBytes(n), version, height: t.height(n) }, storedHash: t.digest(n) };
          if ("page" in n) {
            const b = pagedBranch(n.page, n.at);
            return { node: { key: b.key, version, height: b.height }, storedHash: toDigest(b.hash) };
          }
          const b = n as BranchRow;
          return { node: { key: b.key, version, height: b.height }, storedHash: toDigest(b.hash) };
        }
        // The leaves rows of the version and the tree's leaves must be the same, in the same (key) order.
        const seq = typeof n === "number" ? t.seq(n) : n.seq;
        const row = rows[leaf++];
        if (row === undefined || row.id !== leafRowId(seq) || row.version !== version || row.hash === null || row.value === null) {
          throw new IavlError("CORRUPT", `the leaves of version ${version === row?.version ? version : "?"} disagree with the tree at leaf ${version}/${seq}`);
        }
        firstKeys.push(row.key);
        heights.push(0);
        return { node: { key: row.key, value: row.value, version, height: 0 }, storedHash: withHashes ? toDigest(row.hash) : undefined };
      });
    });
    yield out;
  }
}

/** A branch row with its children's sequences in their in-memory form. */
function inMemoryForm<T extends BranchLinks>(b: T): T {
  b.leftSeq = memorySeq(b.leftSeq);
  b.rightSeq = memorySeq(b.rightSeq);
  return b;
}

/**
 * The nodes of the version `v` reads, in post-order, over its tree `tree`, in batches, each batch's reads checked
 * whole. The tree's table is pinned while the walk is open: the part of the tree not yet stored is walked in memory,
 * and its owner may go on committing meanwhile.
 */
export function walkStored(v: VersionRead, tree: VersionTree, withHashes: boolean): IterableIterator<StoredNode> {
  return pinnedWalk(tree.src.t, () => walkTree(v, tree, withHashes));
}

function* walkTree(v: VersionRead, { root, src }: VersionTree, withHashes: boolean): Generator<StoredNode> {
  // An audit (with the stored hashes) rehashes every value itself, to name each one that does not match.
  const leaves = leafSource(v.store, v.store.db.name, v.row.version, v.since, v.row.size, v.run, !withHashes);
  try {
    for (const batch of walkVersion(src.t, root, v.store, leaves, v.run, withHashes)) {
      v.alive();
      yield* batch;
    }
  } finally {
    leaves.close();
  }
}
