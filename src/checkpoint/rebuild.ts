/**
 * Rebuilding the tree of a stored version: the replay base's tree, loaded lazily, then the log of every version
 * after it, checked against the version's recorded root hash.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { equalBytes, toHex } from "../base/bytes.js";
import { digestBytes, EMPTY_DIGEST, innerHash, leafHash, sha256, toDigest, type Digest } from "../base/hash.js";
import { Mutator } from "../tree/mutate.js";
import { hashNode, type Node } from "../tree/node.js";
import type { VersionRow } from "../sqlite/rows.js";
import type { StoreReader } from "../sqlite/store-reader.js";
import { rowCount } from "../sqlite/version-ops.js";
import { StoreSource } from "./node-source.js";
import { replayVersion } from "./replay.js";

/** The tree of `row`'s version; throws `CORRUPT` when it does not reach the recorded hash. */
export function rebuildVersion(store: StoreReader, src: StoreSource, row: VersionRow): Node | undefined {
  if (row.checkpoint) {
    const root = src.root(row);
    checkRoot(store, src, root, row);
    return root;
  }
  const base = store.replayBase(row.version);
  let root = base === undefined ? undefined : src.root(base);
  const from = base === undefined ? store.firstVersion() : base.version + 1;
  const m = new Mutator(from, src);
  for (let v = from; v <= row.version; v++) {
    const vo = store.ops(v);
    if (vo === undefined) throw new IavlError("CORRUPT", `the operations of version ${v}, which version ${row.version} replays, are missing`);
    root = replayVersion(m, root, v, vo, store.leafHashes(vo.firstLeaf, rowCount(vo.ops)));
  }
  const h = root === undefined ? EMPTY_DIGEST : hashNode(root, src);
  if (h !== toDigest(row.hash)) {
    throw new IavlError("CORRUPT", `replaying to version ${row.version} gives root ${toHex(digestBytes(h))}, but the store recorded ${toHex(row.hash)}`);
  }
  return root;
}

/**
 * Checks a checkpoint's stored root against its version row: the root's hash is recomputed from its children's stored
 * hashes (or, for a one-key tree, from its value), so that a damaged root row is found when it is loaded, not when
 * the next commit publishes a root hash built on it.
 */
function checkRoot(store: StoreReader, src: StoreSource, root: Node | undefined, row: VersionRow): void {
  let got: Digest;
  if (root === undefined) got = EMPTY_DIGEST;
  else if (root.height === 0) got = leafHash(root.key, sha256(store.valueAt(root.key, root.version) ?? new Uint8Array(0)), root.version);
  else got = innerHash(root.height, root.size, root.version, hashNode(src.left(root), src), hashNode(src.right(root), src));
  const recorded = toDigest(row.hash);
  if (got !== recorded || (root?.hash !== undefined && root.hash !== recorded)) {
    throw new IavlError("CORRUPT", `the stored root of version ${row.version} hashes to ${toHex(digestBytes(got))}, but the store recorded ${toHex(row.hash)}`);
  }
}

/** Nodes a rebuilt tree may load before it is dropped and rebuilt on demand, so that a long-lived reader stays bounded. */
const MAX_LOADS = 500_000;

/**
 * The trees of historic versions, rebuilt on demand and the last one kept: a proof of an old version pays for its
 * replay once, and the kept tree is dropped once it has loaded {@link MAX_LOADS} nodes. It has a node source of its
 * own, so its nodes never mix with a writer's working set.
 */
export class RebuiltTrees {
  readonly src: StoreSource;
  private last: { row: VersionRow; root: Node | undefined } | undefined;

  constructor(private readonly store: StoreReader) {
    this.src = new StoreSource(store);
  }

  /** The tree of `row`'s version. */
  root(row: VersionRow): Node | undefined {
    // The hash too: after a rollback, the same version number may name another tree.
    const last = this.last;
    if (last !== undefined && last.row.version === row.version && equalBytes(last.row.hash, row.hash) && this.src.loads < MAX_LOADS) return last.root;
    this.last = undefined;
    this.src.loads = 0;
    const root = rebuildVersion(this.store, this.src, row);
    this.last = { row, root };
    return root;
  }

  /** Drops the kept tree. */
  clear(): void {
    this.last = undefined;
  }
}
