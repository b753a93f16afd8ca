/**
 * The rows of an imported tree: node keys given in stream order, the node rows of each batch, and the version row.
 * @module
 */
import { latin1Bytes } from "../base/bytes.js";
import { digestBytes, EMPTY_DIGEST } from "../base/hash.js";
import type { ImportedNode } from "../tree/importer.js";
import type { ImportBatch, VersionRow } from "../sqlite/rows.js";
import { leafKeySeq, leafRowId, storedSeq } from "../sqlite/node-rows.js";

/** Node keys for imported nodes, in stream order: leaves rows 1, 2, …; branches numbered from 1 per version. */
export class Numbering {
  private leaves = 0;
  private readonly branches = new Map<number, number>();

  /** The sequence number of `n`, the next one of its kind (leaf, or branch of its version). */
  next(n: ImportedNode): number {
    if (n.height === 0) return leafKeySeq(++this.leaves);
    const seq = (this.branches.get(n.version) ?? 0) + 1;
    this.branches.set(n.version, seq);
    return seq;
  }
}

/** Numbers a batch of completed nodes (children come before parents) and turns it into rows. */
export function toRows(batch: ImportedNode[], numbering: Numbering): ImportBatch {
  const rows: ImportBatch = { leaves: [], branches: [] };
  for (const n of batch) {
    n.seq = numbering.next(n);
    const key = latin1Bytes(n.key);
    const hash = digestBytes(n.hash);
    if (n.height === 0) {
      rows.leaves.push({ version: n.version, id: leafRowId(n.seq), key, hash, value: n.value ?? null });
      continue;
    }
    const l = n.left!;
    const r = n.right!;
    rows.branches.push({
      version: n.version,
      seq: n.seq,
      key,
      height: n.height,
      size: n.size,
      hash,
      leftVersion: l.version,
      leftSeq: storedSeq(l.seq),
      rightVersion: r.version,
      rightSeq: storedSeq(r.seq),
    });
  }
  return rows;
}

/**
 * The row of the imported `version`, whose root is `root` (numbered by {@link toRows}; undefined for an empty
 * tree). A checkpoint: every node of the import is written.
 */
export function importedVersionRow(version: number, root: ImportedNode | undefined): VersionRow {
  return {
    version,
    hash: digestBytes(root?.hash ?? EMPTY_DIGEST),
    size: root?.size ?? 0,
    checkpoint: true,
    rootVersion: root?.version ?? null,
    rootSeq: root === undefined ? null : storedSeq(root.seq),
    ops: 0,
    firstLeaf: null,
    leafRows: null,
  };
}
