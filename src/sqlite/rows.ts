/**
 * The rows of a store as plain values: what one version writes and what lookups return. Every BLOB read from SQLite
 * becomes a plain `Uint8Array` here (better-sqlite3 returns Buffers, whose `slice()` shares memory).
 * @module
 */

/** A committed version (the commit marker). */
export interface VersionRow {
  version: number;
  hash: Uint8Array;
  size: number;
  checkpoint: boolean;
  rootVersion: number | null;
  rootSeq: number | null;
  ops: number;
  /** The version's leaves rows are ids firstLeaf … firstLeaf + leafRows − 1, in key order; null when not known. */
  firstLeaf: number | null;
  leafRows: number | null;
}

/** A stored leaf as the tree sees it: its node key (version, LEAF_BASE + id), key and hash. */
export interface LeafRow {
  version: number;
  id: number;
  key: Uint8Array;
  hash: Uint8Array;
}

/** A leaves row a version writes: the leaf of a set (hash and value), or a removal (both null). */
export interface LeafWrite {
  id: number;
  key: Uint8Array;
  hash: Uint8Array | null;
  value: Uint8Array | null;
}

/** A stored branch node. */
export interface BranchRow extends BranchLinks {
  key: Uint8Array;
  height: number;
  size: number;
  hash: Uint8Array;
  /** The children's heights, sizes and hashes (sqlite/branch-kids.ts); null in rows written without them. */
  kids: Uint8Array | null;
}

/** A branch's node key and its children's: the shape of the tree without what each node holds. */
export interface BranchLinks {
  version: number;
  seq: number;
  leftVersion: number;
  leftSeq: number;
  rightVersion: number;
  rightSeq: number;
}

/**
 * The branch rows of a checkpoint, made one at a time as they are read (a checkpoint may have hundreds of thousands,
 * and each row with its two arrays is a few hundred heap bytes): how many, and the bytes of their keys and hashes.
 */
export interface BranchRows extends Iterable<BranchRow> {
  readonly count: number;
  readonly bytes: number;
}

/** A page row a checkpoint writes. */
export interface PageWrite {
  id: number;
  /** The checkpoint that wrote it: a rollback past it deletes it. */
  version: number;
  bytes: Uint8Array;
}

/** The page rows of a checkpoint, with their count and bytes (what they cost in flight). */
export interface PageRows extends Iterable<PageWrite> {
  readonly count: number;
  readonly bytes: number;
}

/** What one version writes, in one transaction. */
export interface VersionWrite {
  version: VersionRow;
  /** One row per key changed, ids in key order (so a version's changes read back in key order). */
  leaves: LeafWrite[];
  /** The id of the version's first leaves row (the next free id when it changed nothing). */
  firstLeaf: number;
  /** Every operation in order, packed (version-ops.ts). */
  ops: Uint8Array;
  branches: BranchRows;
  /** A checkpoint's new page rows (layout 3). */
  pages: PageRows;
  /** The stored branches and pages the version replaced, packed (orphaned-branches.ts); empty when none. */
  orphans: Uint8Array;
  /**
   * Packed node keys to add to the orphans of earlier versions: what a checkpoint written over several commits
   * stored after a later version had replaced it, and the nodes it moved (see checkpoint/checkpoint-steps.ts).
   */
  laterOrphans: Array<[version: number, nodes: Uint8Array]>;
  /** An earlier version this write makes a checkpoint (its last rows are among this write's), if any. */
  completes: CheckpointMark | undefined;
}

/** A stored version made a checkpoint: the node key of its root. */
export interface CheckpointMark {
  version: number;
  rootVersion: number;
  rootSeq: number;
}

/** A {@link VersionWrite} as a writer reads it: its rows may be streamed, but every iteration gives them all. */
export interface VersionRows extends Omit<VersionWrite, "leaves" | "branches" | "pages"> {
  leaves: Iterable<LeafWrite>;
  branches: Iterable<BranchRow>;
  pages: Iterable<PageWrite>;
}

/** Rows of an import batch: leaves with their values, the spine's branches, and pages, of any versions. */
export interface ImportBatch {
  leaves: Array<LeafWrite & { version: number }>;
  branches: BranchRow[];
  pages: PageWrite[];
}

/**
 * A BLOB read from SQLite as a plain Uint8Array. better-sqlite3 copies every BLOB into memory of its own (not a
 * pooled slab), so a view of it is as private as a copy, and its `slice()` copies as callers expect.
 */
export function blob(b: unknown): Uint8Array {
  const u = b as Uint8Array;
  return new Uint8Array(u.buffer, u.byteOffset, u.byteLength);
}

/** A version row from the columns `version, hash, size, checkpoint, root_version, root_seq, ops`. */
export function toVersionRow(r: unknown[]): VersionRow {
  return {
    version: r[0] as number,
    hash: blob(r[1]),
    size: r[2] as number,
    checkpoint: r[3] === 1,
    rootVersion: r[4] as number | null,
    rootSeq: r[5] as number | null,
    ops: r[6] as number,
    firstLeaf: r[7] as number | null,
    leafRows: r[8] as number | null,
  };
}

/** The columns {@link toVersionRow} reads. */
export const VERSION_COLUMNS = "version, hash, size, checkpoint, root_version, root_seq, ops, first_leaf, leaf_rows";
