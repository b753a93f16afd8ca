/**
 * The rows one commit writes: a leaves row per key the version changed, in key order, its packed operations, the
 * branches of a checkpoint, and its version row; and the numbering they give the tree's new nodes.
 * @module
 */
import { latin1 } from "../../base/bytes.js";
import { digestBytes } from "../../base/hash.js";
import { NONE, type NodeSource, type NodeTable } from "../../tree/node.js";
import type { CommitInput } from "../../tree/store-contract.js";
import type { Op } from "../../tree/version-log.js";
import { leafKeySeq, storedSeq } from "../../sqlite/node-rows.js";
import type { BranchRows, LeafWrite, PageRows, VersionWrite } from "../../sqlite/rows.js";
import { packOps, type PackedOp } from "../../sqlite/version-ops.js";
import { packNodeKeys } from "../../sqlite/orphaned-branches.js";
import { isPageSeq, slotOfSeq } from "../../sqlite/shards.js";
import { collectDirty, NO_CHECKPOINT } from "../../checkpoint/dirty-branches.js";

/** A commit's rows, with the leaves that now hold their row's node key. */
export interface CommitRows {
  write: VersionWrite;
  /** The version's new leaves (their values are dropped once the version is on disk). */
  leaves: number[];
  /** Page ids the write uses. */
  pagesUsed: number;
  /** Forgets the numbering given, so that a failed write leaves the tree as it was. */
  undo(): void;
}

/** The rows that make a stored version a checkpoint after the fact: its unstored branches and its root's node key. */
export interface CheckpointRows {
  branches: BranchRows;
  pages: PageRows;
  /** The stored nodes the checkpoint moved into new pages, packed as orphans of the version. */
  moved: Uint8Array;
  pagesUsed: number;
  rootVersion: number;
  rootSeq: number;
  /** Forgets the numbering given, so that a failed write leaves the tree as it was. */
  undo(): void;
}

/** The {@link CheckpointRows} of stored version `version`, whose tree is `root` (not empty); page ids from `firstPage`. */
export function checkpointRows(src: NodeSource, version: number, root: number, firstPage: number): CheckpointRows {
  const batch = collectDirty(src, root, version, firstPage);
  const t = src.t;
  return {
    branches: batch.rows,
    pages: batch.pages,
    moved: packNodeKeys(batch.moved),
    pagesUsed: batch.pagesUsed,
    rootVersion: t.version(root),
    rootSeq: storedSeq(t.seq(root)),
    undo: batch.undo,
  };
}

/**
 * The node keys of the stored branches and pages among a version's orphans, and of those a checkpoint moved into new
 * pages, packed: what pruning deletes once no tree holds them. A page goes with its root (slot 0); a leaf's row is
 * the leaves table's to prune.
 */
function storedOrphans(t: NodeTable, orphans: readonly number[], moved: readonly number[]): Uint8Array {
  const keys: number[] = [...moved];
  for (const n of orphans) {
    const seq = t.seq(n);
    if (seq > 0 && (!isPageSeq(seq) || slotOfSeq(seq) === 0)) keys.push(t.version(n), seq);
  }
  return packNodeKeys(keys);
}

/**
 * The rows of `c`, its leaves rows numbered from `firstLeaf`: one per key the version changed (set, or removed having
 * been there before it), in key order, so that the version's changes read back in key order from consecutive ids; a
 * set's leaf takes its row's id. With `checkpoint`, every unstored spine branch and page goes too, page ids from
 * `firstPage`.
 */
export function versionRows(src: NodeSource, c: CommitInput, firstLeaf: number, checkpoint: boolean, firstPage: number): CommitRows {
  const t = src.t;
  const { ops } = c.log;
  const changed = ops.filter((op) => op.last && (op.leaf !== NONE || op.existed)).map((op) => ({ op, id: latin1(op.key) }));
  changed.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const rowOf = new Map<Op, number>();
  const rows: LeafWrite[] = [];
  const leaves: number[] = [];
  changed.forEach(({ op }, row) => {
    rowOf.set(op, row);
    const leaf = op.leaf;
    if (leaf === NONE) {
      rows.push({ id: firstLeaf + row, key: op.key, hash: null, value: null });
      return;
    }
    t.setSeq(leaf, leafKeySeq(firstLeaf + row));
    leaves.push(leaf);
    rows.push({ id: firstLeaf + row, key: op.key, hash: t.hashBytes(leaf), value: t.value(leaf) ?? null });
  });
  const undoLeaves = (): void => {
    for (const leaf of leaves) t.setSeq(leaf, 0);
  };
  const packed: PackedOp[] = ops.map((op) => ({ key: op.key, set: op.leaf !== NONE, row: rowOf.get(op) }));
  const root = c.root;
  let batch: ReturnType<typeof collectDirty> | undefined;
  try {
    batch = checkpoint ? collectDirty(src, root, c.version, firstPage) : NO_CHECKPOINT;
    const write: VersionWrite = {
      version: {
        version: c.version,
        hash: digestBytes(c.hash),
        size: root === NONE ? 0 : t.size(root),
        checkpoint,
        rootVersion: checkpoint && root !== NONE ? t.version(root) : null,
        rootSeq: checkpoint && root !== NONE ? storedSeq(t.seq(root)) : null,
        ops: ops.length,
        firstLeaf,
        leafRows: rows.length,
      },
      leaves: rows,
      firstLeaf,
      ops: packOps(packed),
      branches: batch.rows,
      pages: batch.pages,
      orphans: storedOrphans(t, c.orphans, batch.moved),
    };
    const numbered = batch;
    return {
      write,
      leaves,
      pagesUsed: batch.pagesUsed,
      undo: () => {
        numbered?.undo();
        undoLeaves();
      },
    };
  } catch (e) {
    batch?.undo();
    undoLeaves();
    throw e;
  }
}
