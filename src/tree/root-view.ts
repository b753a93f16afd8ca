/**
 * A {@link ReadonlyTree} that answers every read by walking one root.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { auditVersion, type StoredNode } from "./audit.js";
import { exportItem, exportNodes, postOrder, STILL } from "./export-walk.js";
import type { ExportNode } from "./export-node.js";
import { iterateLeaves } from "./iterate.js";
import { hashNode, NONE, rootDigest, rootHash, type NodeSource } from "./node.js";
import { createProof } from "./proof.js";
import { findLeaf } from "./read.js";
import type { AuditOptions, AuditReport, CommitmentProof, IterateOptions, ReadonlyTree } from "./readonly-tree.js";
import { checkIterateOptions, checkKey } from "../base/validate.js";
import { latin1 } from "../base/bytes.js";
import type { ValueOf } from "./store-contract.js";

/** Reads of one committed root held by a node source. */
export class RootView implements ReadonlyTree {
  constructor(
    readonly version: number,
    /** The version's tree ({@link NONE}: empty). */
    readonly tree: number,
    protected readonly src: NodeSource,
    protected readonly valueOf: ValueOf,
    /**
     * Checked before every read and before a walk goes on: throws once the view's nodes may be gone (the owner closed,
     * the version pruned).
     */
    protected readonly guard: () => void = STILL,
  ) {}

  get hash(): Uint8Array {
    this.guard();
    return rootHash(this.src, this.tree);
  }

  get size(): number {
    this.guard();
    return this.tree === NONE ? 0 : this.src.t.size(this.tree);
  }

  get(key: Uint8Array): Uint8Array | undefined {
    checkKey(key);
    this.guard();
    const leaf = findLeaf(this.tree, latin1(key), this.src);
    return leaf === NONE ? undefined : this.valueOf(this.src.t, leaf).slice();
  }

  has(key: Uint8Array): boolean {
    checkKey(key);
    this.guard();
    return findLeaf(this.tree, latin1(key), this.src) !== NONE;
  }

  *iterate(opts: IterateOptions = {}): IterableIterator<[Uint8Array, Uint8Array]> {
    checkIterateOptions(opts);
    this.guard();
    const t = this.src.t;
    for (const leaf of iterateLeaves(this.tree, opts, this.src, this.guard)) yield [t.keyBytes(leaf), this.valueOf(t, leaf).slice()];
  }

  *export(): IterableIterator<ExportNode> {
    this.guard();
    yield* exportNodes(this.tree, this.src, this.valueOf, this.guard);
  }

  audit(options?: AuditOptions): AuditReport {
    this.guard();
    const stored = rootDigest(this.src, this.tree);
    const nodes = (function* (v: RootView): Generator<StoredNode> {
      const t = v.src.t;
      for (const n of postOrder(v.tree, v.src, v.guard)) yield { node: exportItem(t, n, v.valueOf), storedHash: t.digest(n) };
    })(this);
    return auditVersion(this, nodes, stored, options);
  }

  proof(key: Uint8Array): CommitmentProof {
    checkKey(key);
    this.guard();
    if (this.tree !== NONE) hashNode(this.src, this.tree);
    return createProof(this.tree, key, this.src, this.valueOf);
  }
}

/** The value of a leaf held in memory. */
export const memoryValue: ValueOf = (t, leaf) => {
  const v = t.value(leaf);
  if (v === undefined) throw new IavlError("CORRUPT", "leaf without a value");
  return v;
};
