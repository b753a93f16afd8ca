/**
 * Rebuilding the tree of a stored version: the replay base's tree, loaded lazily, then the log of every version
 * after it, checked against the version's recorded root hash.
 * @module
 */
import { IavlError } from "../../base/errors.js";
import { equalBytes, latin1Bytes, toHex } from "../../base/bytes.js";
import { digestBytes, EMPTY_DIGEST, innerHash, leafHash, sha256, toDigest, type Digest } from "../../base/hash.js";
import { Mutator } from "../../tree/mutate.js";
import { NONE, rootDigest } from "../../tree/node.js";
import type { VersionRow } from "../../sqlite/rows.js";
import type { StoreReader } from "../../sqlite/store-reader.js";
import { rowCount } from "../../sqlite/version-ops.js";
import { NodeLoader } from "../node-loader.js";
import { replayVersion } from "./replay.js";
import { replayStart } from "../../checkpoint/replay-start.js";

let replays = 0;

/** Versions replayed by this process's rebuilds so far: what a test of how readers keep trees counts. */
export function replayedVersions(): number {
  return replays;
}

/**
 * The tree of `row`'s version; throws `CORRUPT` when it does not reach the recorded hash. With `after` (the tree of
 * an older version in `src`'s table, no older than the replay base), only the versions after it are replayed, on top
 * of it, a checkpoint's too. The nodes of older trees the replay replaced are freed, or handed to `replaced`, which
 * then owns them (an older tree kept whole).
 */
export function rebuildVersion(
  store: StoreReader,
  src: NodeLoader,
  row: VersionRow,
  after?: { version: number; root: number },
  replaced: (nodes: number[]) => void = (nodes) => nodes.forEach((n) => src.t.retire(n)),
): number {
  if (row.checkpoint && after === undefined) {
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
  replays += row.version - from + 1;
  for (let v = from; v <= row.version; v++) {
    const vo = store.versions.ops(v);
    if (vo === undefined) throw new IavlError("CORRUPT", `the operations of version ${v}, which version ${row.version} replays, are missing`);
    root = replayVersion(m, root, v, vo, store.leaves.hashes(vo.firstLeaf, rowCount(vo.ops)));
  }
  const h = rootDigest(src, root);
  if (h !== toDigest(row.hash)) {
    throw new IavlError("CORRUPT", `replaying to version ${row.version} gives root ${toHex(digestBytes(h))}, but the store recorded ${toHex(row.hash)}`);
  }
  replaced(m.takeOrphans());
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
  else if (t.height(root) === 0) got = leafHash(t.key(root), sha256(store.leaves.valueAt(latin1Bytes(t.key(root)), t.version(root)) ?? new Uint8Array(0)), t.version(root));
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

/** Trees a reader keeps, of consecutive versions: a query at any of the last few heights replays nothing. */
const KEPT_TREES = 32;

/**
 * Nodes the kept trees may hold beyond the newest one's (the nodes each next version replaced) before the oldest trees
 * go: what their sharing costs, bounded whatever a version changes.
 */
const KEPT_NODES = 400_000;

/** A kept tree, and the nodes of it that the next kept tree replaced (freed when it goes). */
interface Kept {
  row: VersionRow;
  root: number;
  replaced: number[];
}

/**
 * The trees of historic versions, rebuilt on demand: the trees of up to {@link KEPT_TREES} consecutive versions,
 * each replayed on the one before, sharing the nodes they have in common. A proof of an old version pays for its
 * replay once, a reader that follows new versions replays only each new one, and a service asked for proofs at the
 * last few heights (a relayer's queries) replays nothing. The kept trees are dropped once their loader has loaded
 * {@link MAX_LOADS} nodes. A tree rebuilt from its replay base gets a node table of its own, so its nodes never mix
 * with a writer's working set, and a walk still going over a tree that was dropped keeps that one whole.
 */
export class RebuiltTrees {
  private src: NodeLoader;
  /** Kept trees of consecutive versions, oldest first, all of one history. */
  private kept: Kept[] = [];
  /** The rollbacks the store had recorded when the first kept tree was built (one since may have replaced them). */
  private rollbacks = 0;
  /** Nodes the kept trees hold for the older ones among them. */
  private held = 0;

  constructor(private readonly store: StoreReader) {
    this.src = new NodeLoader(store);
  }

  /** The tree of `row`'s version. */
  tree(row: VersionRow): VersionTree {
    const newest = this.kept.at(-1);
    if (newest !== undefined && this.src.loads < MAX_LOADS) {
      const k = this.kept[row.version - this.kept[0]!.row.version];
      // The hash too: after a rollback, the same version number may name another tree.
      if (k !== undefined && k.row.version === row.version && equalBytes(k.row.hash, row.hash)) return { root: k.root, src: this.src };
      if (newest.row.version < row.version && this.canReplayOn(newest, row)) {
        try {
          this.extend(newest, row.version);
          const last = this.kept.at(-1)!;
          if (equalBytes(last.row.hash, row.hash)) return { root: last.root, src: this.src };
        } catch {
          // Whatever went wrong on top of the kept trees, a replay from the checkpoint settles it.
        }
      }
    }
    return this.rebuild(row);
  }

  /** Drops the kept trees. */
  clear(): void {
    this.kept = [];
    this.held = 0;
    this.src = new NodeLoader(this.store);
  }

  /**
   * Keeps the trees of the last {@link KEPT_TREES} versions up to `to`, replayed on `from`'s tree (the versions before
   * them in one replay), each checked against its recorded hash.
   */
  private extend(from: Kept, to: number): void {
    let older = from;
    for (let v = Math.max(from.row.version + 1, to - KEPT_TREES + 1); v <= to; v = older.row.version + 1) {
      const row = this.store.versions.row(v);
      if (row === undefined) throw this.store.versions.missing(v);
      const base = older;
      const t = this.src.t;
      const root = rebuildVersion(this.store, this.src, row, { version: base.row.version, root: base.root }, (nodes) => {
        // Nodes of the versions replayed in between belong to no kept tree.
        for (const n of nodes) {
          if (t.version(n) > base.row.version) t.retire(n);
          else base.replaced.push(n);
        }
        this.held += base.replaced.length;
      });
      older = { row, root, replaced: [] };
      this.kept.push(older);
      this.trim();
    }
  }

  /**
   * New kept trees, ending at `row`'s: a checkpoint's tree as stored, or else the replay from its replay base, which
   * keeps the last {@link KEPT_TREES} versions, so that queries at the heights just below it replay nothing more.
   */
  private rebuild(row: VersionRow): VersionTree {
    this.clear();
    this.rollbacks = this.store.versions.rollbacks();
    const first = row.checkpoint ? row.version : Math.max(replayStart(this.store.versions, row.version).from, row.version - KEPT_TREES + 1);
    const firstRow = first === row.version ? row : this.store.versions.row(first);
    if (firstRow === undefined) throw this.store.versions.missing(first);
    this.kept = [{ row: firstRow, root: rebuildVersion(this.store, this.src, firstRow), replaced: [] }];
    this.extend(this.kept[0]!, row.version);
    return { root: this.kept.at(-1)!.root, src: this.src };
  }

  /** Drops the oldest kept trees past the bounds, freeing the nodes only they held. */
  private trim(): void {
    while (this.kept.length > KEPT_TREES || (this.kept.length > 1 && this.held > KEPT_NODES)) {
      const old = this.kept.shift()!;
      this.held -= old.replaced.length;
      for (const n of old.replaced) this.src.t.retire(n);
    }
  }

  /**
   * True when no rollback replaced the kept trees and `row`'s version can be replayed on `kept`: no checkpoint lies
   * between them but `row`'s own (replayed too, rather than loaded beside the kept trees).
   */
  private canReplayOn(kept: Kept, row: VersionRow): boolean {
    const base = this.store.versions.replayBase(row.checkpoint ? row.version - 1 : row.version);
    return this.store.versions.rollbacks() === this.rollbacks && kept.row.version >= (base?.version ?? 0);
  }
}
