/**
 * The rows of an imported tree: node keys given in stream order, the leaves, pages and spine rows of each batch, and
 * the version row.
 * @module
 */
import { latin1Bytes } from "../base/bytes.js";
import { digestBytes, EMPTY_DIGEST } from "../base/hash.js";
import type { ImportedNode } from "../tree/importer.js";
import type { BranchRow, ImportBatch, PageWrite, VersionRow } from "../sqlite/rows.js";
import { encodeKids } from "../sqlite/branch-kids.js";
import { leafKeySeq, leafRowId, storedSeq } from "../sqlite/node-rows.js";
import { PageWriter } from "../sqlite/page-codec.js";
import { PAGE_LEAVES, pageSeq } from "../sqlite/shards.js";

/**
 * Node keys and rows of an imported tree, in stream order (children before parents), as a checkpoint lays them out:
 * leaves rows 1, 2, …; each canonical page (a subtree of at most PAGE_LEAVES leaves under a spine node, or the whole
 * tree when that small) one page row, ids from 1; the spine's branches numbered from 1 per version. A subtree's nodes
 * are kept until its parent shows whether it is a page, which may be a batch later.
 */
export class Numbering {
  private leaves = 0;
  private pages = 0;
  private readonly branches = new Map<number, number>();
  /** The completed subtrees of at most PAGE_LEAVES leaves not yet under a spine node, each in post-order. */
  private readonly small: ImportedNode[][] = [];
  private readonly writer = new PageWriter();

  /** `version`: the imported version, the checkpoint every page is written by. */
  constructor(private readonly version: number) {}

  /** Numbers a batch of completed nodes and turns it into rows. */
  rows(batch: ImportedNode[]): ImportBatch {
    const rows: ImportBatch = { leaves: [], branches: [], pages: [] };
    for (const n of batch) {
      if (n.height === 0) {
        n.seq = leafKeySeq(++this.leaves);
        rows.leaves.push({ version: n.version, id: leafRowId(n.seq), key: latin1Bytes(n.key), hash: digestBytes(n.hash), value: n.value ?? null });
        this.small.push([n]);
        continue;
      }
      const l = n.left!;
      const r = n.right!;
      // The right subtree completed last, so it is on top.
      const right = r.size <= PAGE_LEAVES ? this.small.pop()! : undefined;
      const left = l.size <= PAGE_LEAVES ? this.small.pop()! : undefined;
      if (n.size <= PAGE_LEAVES) {
        this.small.push([...left!, ...right!, n]);
        continue;
      }
      for (const sub of [left, right]) if (sub !== undefined && sub.length > 1) rows.pages.push(this.page(sub));
      const seq = (this.branches.get(n.version) ?? 0) + 1;
      this.branches.set(n.version, seq);
      n.seq = seq;
      const row: BranchRow = {
        version: n.version,
        seq,
        key: latin1Bytes(n.key),
        height: n.height,
        size: n.size,
        hash: digestBytes(n.hash),
        leftVersion: l.version,
        leftSeq: storedSeq(l.seq),
        rightVersion: r.version,
        rightSeq: storedSeq(r.seq),
        kids: null,
      };
      row.kids = encodeKids(row, { height: l.height, size: l.size, hashes: digestBytes(l.hash), at: 0 }, { height: r.height, size: r.size, hashes: digestBytes(r.hash), at: 0 });
      rows.branches.push(row);
    }
    return rows;
  }

  /** The page of the whole tree when it is a branch of at most PAGE_LEAVES leaves (after the last batch). */
  rootPage(): PageWrite | undefined {
    const root = this.small.pop();
    return root !== undefined && root.length > 1 ? this.page(root) : undefined;
  }

  /** Encodes one subtree (post-order, its leaves numbered) as the next page and numbers its branches by slot. */
  private page(nodes: ImportedNode[]): PageWrite {
    const id = ++this.pages;
    const w = this.writer;
    for (let i = 0; i < nodes.length; i++) {
      const n = nodes[i]!;
      const hash = digestBytes(n.hash);
      if (n.height === 0) w.leaf(n.version, hash, n.key, leafRowId(n.seq));
      else {
        w.branch(n.height, n.size, n.version, hash);
        n.seq = pageSeq(id, nodes.length - 1 - i);
      }
    }
    return { id, version: this.version, bytes: w.finish() };
  }
}

/**
 * The row of the imported `version`, whose root is `root` (numbered by {@link Numbering}; undefined for an empty
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
