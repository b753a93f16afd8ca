/**
 * Rebuilding the tree of a stored version: the replay base's tree, loaded lazily, then the log of every version
 * after it, checked against the version's recorded root hash.
 * @module
 */
import { IavlError } from "../../base/errors.js";
import { equalBytes, toHex } from "../../base/bytes.js";
import { digestBytes, EMPTY_DIGEST, innerHash, leafHash, sha256, toDigest, type Digest } from "../../base/hash.js";
import { Mutator } from "../../tree/mutate.js";
import { NONE, rootDigest } from "../../tree/node.js";
import type { VersionRow } from "../../sqlite/rows.js";
import type { StoreReader } from "../../sqlite/store-reader.js";
import { rowCount } from "../../sqlite/version-ops.js";
import { NodeLoader } from "../node-loader.js";
import { replayVersion } from "./replay.js";
import { replayStart } from "../../checkpoint/replay-start.js";

/**
 * The tree of `row`'s version; throws `CORRUPT` when it does not reach the recorded hash. With `after` (the tree of
 * an older version in `src`'s table, no older than the replay base), only the versions after it are replayed, on top
 * of it. The nodes the replay replaced are freed: the older trees it went through are not kept. `replaced` hears,
 * for each version replayed, the nodes it replaced, before they are freed.
 */
export function rebuildVersion(
  store: StoreReader,
  src: NodeLoader,
  row: VersionRow,
  after?: { version: number; root: number },
  replaced?: (version: number, nodes: readonly number[]) => void,
): number {
  if (row.checkpoint) {
    const root = src.root(row);
    checkRoot(store, src, root, row);
    return root;
  }
  let root: number;
  let from: number;
  if (after !== undefined) {
    root = after.root;
    from = after.version + 1;
  } else {
    const start = replayStart(store.versions, row.version);
    root = start.base === undefined ? NONE : src.root(start.base);
    from = start.from;
  }
  const m = new Mutator(from, src);
  const orphans: number[][] = [];
  for (let v = from; v <= row.version; v++) {
    const vo = store.versions.ops(v);
    if (vo === undefined) throw new IavlError("CORRUPT", `the operations of version ${v}, which version ${row.version} replays, are missing`);
    root = replayVersion(m, root, v, vo, store.leaves.hashes(vo.firstLeaf, rowCount(vo.ops)));
    if (replaced !== undefined) {
      const nodes = m.takeOrphans();
      replaced(v, nodes);
      orphans.push(nodes);
    }
  }
  const h = rootDigest(src, root);
  if (h !== toDigest(row.hash)) {
    throw new IavlError("CORRUPT", `replaying to version ${row.version} gives root ${toHex(digestBytes(h))}, but the store recorded ${toHex(row.hash)}`);
  }
  orphans.push(m.takeOrphans());
  for (const nodes of orphans) for (const n of nodes) src.t.retire(n);
  return root;
}

/**
 * Checks a checkpoint's stored root against its version row: the root's hash is recomputed from its children's stored
 * hashes (or, for a one-key tree, from its value), so that a damaged root row is found when it is loaded, not when
 * the next commit publishes a root hash built on it.
 */
function checkRoot(store: StoreReader, src: NodeLoader, root: number, row: VersionRow): void {
  const t = src.t;
  let got: Digest;
  if (root === NONE) got = EMPTY_DIGEST;
  else if (t.height(root) === 0) got = leafHash(t.key(root), sha256(store.leaves.valueAt(t.keyBytes(root), t.version(root)) ?? new Uint8Array(0)), t.version(root));
  else {
    const l = src.left(root);
    const r = src.right(root);
    got = innerHash(t.height(root), t.size(root), t.version(root), rootDigest(src, l), rootDigest(src, r));
  }
  const recorded = toDigest(row.hash);
  if (got !== recorded || (root !== NONE && t.hashed(root) && t.digest(root) !== recorded)) {
    throw new IavlError("CORRUPT", `the stored root of version ${row.version} hashes to ${toHex(digestBytes(got))}, but the store recorded ${toHex(row.hash)}`);
  }
}

/** Nodes a rebuilt tree may load before it is dropped and rebuilt on demand, so that a long-lived reader stays bounded. */
const MAX_LOADS = 500_000;

/** A version's tree and the source that loads its nodes. */
export interface VersionTree {
  root: number;
  src: NodeLoader;
}

/**
 * The trees of historic versions, rebuilt on demand and the last one kept: a proof of an old version pays for its
 * replay once, and the kept tree is dropped once it has loaded {@link MAX_LOADS} nodes. A tree rebuilt from its
 * replay base gets a node table of its own, so its nodes never mix with a writer's working set, and a walk still
 * going over the tree it replaced keeps that one whole.
 */
export class RebuiltTrees {
  private src: NodeLoader;
  /**
   * The kept tree; the checkpoint it was loaded from (0: the empty tree), which a replay on top of it carries; and the
   * rollbacks the store had recorded when it was built (one since may have replaced it).
   */
  private last: { row: VersionRow; root: number; base: number; rollbacks: number } | undefined;

  constructor(private readonly store: StoreReader) {
    this.src = new NodeLoader(store);
  }

  /**
   * The tree of `row`'s version. A reader that follows new versions asks for each in turn: the kept tree then only
   * has the versions since it replayed on top of it, not every version since the checkpoint.
   */
  tree(row: VersionRow): VersionTree {
    const last = this.last;
    if (last !== undefined && this.src.loads < MAX_LOADS && last.base === this.baseOf(row)) {
      // The hash too: after a rollback, the same version number may name another tree.
      if (last.row.version === row.version && equalBytes(last.row.hash, row.hash)) return { root: last.root, src: this.src };
      if (last.row.version < row.version && !row.checkpoint && this.store.versions.rollbacks() === last.rollbacks) {
        try {
          const root = rebuildVersion(this.store, this.src, row, { version: last.row.version, root: last.root });
          this.last = { ...last, row, root };
          return { root, src: this.src };
        } catch {
          // Whatever went wrong on top of the kept tree, a replay from the checkpoint settles it.
        }
      }
    }
    this.last = undefined;
    this.src = new NodeLoader(this.store);
    const rollbacks = this.store.versions.rollbacks();
    // Read before the rebuild reads it again: a checkpoint landing in between only makes the next call rebuild.
    const base = this.baseOf(row);
    const root = rebuildVersion(this.store, this.src, row);
    this.last = { row, root, base, rollbacks };
    return { root, src: this.src };
  }

  /**
   * The checkpoint a replay to `row` starts from now. A tree loaded from another one must not be kept for it, even
   * when it is older than the kept version: once a checkpoint written over several commits lands, the tree built
   * meanwhile from the one before still links to rows the new checkpoint moved, and a prune past it deletes them.
   */
  private baseOf(row: VersionRow): number {
    return row.checkpoint ? row.version : this.store.versions.replayBaseVersion(row.version);
  }

  /** Drops the kept tree. */
  clear(): void {
    this.last = undefined;
    this.src = new NodeLoader(this.store);
  }
}
