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
import { leafKeySeq } from "../../sqlite/node-rows.js";
import type { LeafWrite, VersionWrite } from "../../sqlite/rows.js";
import { packOps, type PackedOp } from "../../sqlite/version-ops.js";
import { packNodeKeys } from "../../sqlite/orphaned-branches.js";
import { isPageSeq, slotOfSeq } from "../../sqlite/shards.js";
import { NO_CHECKPOINT } from "../../checkpoint/dirty-branches.js";
import { laterMark, type CheckpointStep } from "../../checkpoint/checkpoint-steps.js";

/** A commit's rows, with the leaves that now hold their row's node key. */
export interface CommitRows {
  write: VersionWrite;
  /** The version's new leaves (their values are dropped once the version is on disk). */
  leaves: number[];
  /** Page ids the write uses. */
  pagesUsed: number;
  /** The checkpoint step the write carries, if any. */
  step: CheckpointStep | undefined;
  /** Forgets the numbering given, so that a failed write leaves the tree as it was. */
  undo(): void;
}

/** The orphans a checkpoint's step adds to versions other than `own` (the commit's), packed. */
export function laterOrphans(step: CheckpointStep | undefined, own: number | undefined): Array<[number, Uint8Array]> {
  const out: Array<[number, Uint8Array]> = [];
  for (const [v, keys] of step?.orphans ?? []) if (v !== own) out.push([v, packNodeKeys(keys)]);
  return out;
}

/**
 * The node keys of the stored branches and pages among a version's orphans, and of those a checkpoint moved into new
 * pages, packed: what pruning deletes once no tree holds them. A page goes with its root (slot 0); a leaf's row is
 * the leaves table's to prune.
 */
function storedOrphans(t: NodeTable, orphans: readonly number[], moved: readonly number[]): Uint8Array {
  return packNodeKeys([...moved, ...storedKeys(t, orphans)]);
}

/** The node keys (`[version, seq, …]`) of the stored branches and page roots among `nodes`. */
export function storedKeys(t: NodeTable, nodes: readonly number[]): number[] {
  const keys: number[] = [];
  for (const n of nodes) {
    const seq = t.seq(n);
    if (seq > 0 && (!isPageSeq(seq) || slotOfSeq(seq) === 0)) keys.push(t.version(n), seq);
  }
  return keys;
}

/**
 * The rows of `c`, its leaves rows numbered from `firstLeaf`: one per key the version changed (set, or removed having
 * been there before it), in key order, so that the version's changes read back in key order from consecutive ids; a
 * set's leaf takes its row's id. The rows of the checkpoint step that `stepOf` makes once the leaves are numbered go
 * too, if any (checkpoint-steps.ts): when it ends the checkpoint of this very version, the version row names its root.
 */
export function versionRows(src: NodeSource, c: CommitInput, firstLeaf: number, stepOf: () => CheckpointStep | undefined): CommitRows {
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
  let step: CheckpointStep | undefined;
  try {
    step = stepOf();
    const batch = step?.batch ?? NO_CHECKPOINT;
    const own = step?.completes?.version === c.version ? step.completes : undefined;
    const checkpoint = own !== undefined;
    const write: VersionWrite = {
      version: {
        version: c.version,
        hash: digestBytes(c.hash),
        size: root === NONE ? 0 : t.size(root),
        checkpoint,
        rootVersion: own?.rootVersion ?? null,
        rootSeq: own?.rootSeq ?? null,
        ops: ops.length,
        firstLeaf,
        leafRows: rows.length,
      },
      leaves: rows,
      firstLeaf,
      ops: packOps(packed),
      branches: batch.rows,
      pages: batch.pages,
      orphans: storedOrphans(t, c.orphans, step?.orphans.get(c.version) ?? []),
      laterOrphans: laterOrphans(step, c.version),
      completes: own === undefined && step?.completes !== undefined ? laterMark(step.completes) : undefined,
    };
    const made = step;
    return {
      write,
      leaves,
      pagesUsed: batch.pagesUsed,
      step: made,
      undo: () => {
        made?.undo();
        undoLeaves();
      },
    };
  } catch (e) {
    step?.undo();
    undoLeaves();
    throw e;
  }
}
