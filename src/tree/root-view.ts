/**
 * A {@link ReadonlyTree} that answers every read by walking one root.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { auditVersion, type AuditOptions, type AuditReport, type StoredNode } from "./audit.js";
import { exportItem, postOrder } from "./export-walk.js";
import type { ExportNode } from "./export-node.js";
import { digestBytes, EMPTY_DIGEST } from "../base/hash.js";
import { iterateLeaves, type IterateOptions } from "./iterate.js";
import { hashNode, type Node, type NodeSource } from "./node.js";
import { createProof, type CommitmentProof, type ValueOf } from "./proof.js";
import { findLeaf } from "./read.js";
import type { ReadonlyTree } from "./readonly-tree.js";
import { checkIterateOptions, checkKey } from "../base/validate.js";
import { latin1, latin1Bytes } from "../base/bytes.js";

/** Reads of one committed root held by a node source. */
export class RootView implements ReadonlyTree {
  constructor(
    readonly version: number,
    /** The version's tree. */
    readonly tree: Node | undefined,
    protected readonly src: NodeSource,
    protected readonly valueOf: ValueOf,
    /** Checked before every read, so that a closed or pruned view fails clearly. */
    protected readonly guard: () => void = () => {},
  ) {}

  get hash(): Uint8Array {
    this.guard();
    return digestBytes(this.tree === undefined ? EMPTY_DIGEST : hashNode(this.tree, this.src));
  }

  get size(): number {
    this.guard();
    return this.tree?.size ?? 0;
  }

  get(key: Uint8Array): Uint8Array | undefined {
    checkKey(key);
    this.guard();
    const leaf = findLeaf(this.tree, latin1(key), this.src);
    return leaf === undefined ? undefined : this.valueOf(leaf).slice();
  }

  has(key: Uint8Array): boolean {
    checkKey(key);
    this.guard();
    return findLeaf(this.tree, latin1(key), this.src) !== undefined;
  }

  *iterate(opts: IterateOptions = {}): IterableIterator<[Uint8Array, Uint8Array]> {
    checkIterateOptions(opts);
    this.guard();
    for (const leaf of iterateLeaves(this.tree, opts, this.src)) {
      this.guard();
      yield [latin1Bytes(leaf.key), this.valueOf(leaf).slice()];
    }
  }

  *export(): IterableIterator<ExportNode> {
    this.guard();
    for (const n of postOrder(this.tree, this.src)) {
      this.guard();
      yield exportItem(n, this.valueOf);
    }
  }

  audit(options?: AuditOptions): AuditReport {
    this.guard();
    const stored = this.tree === undefined ? EMPTY_DIGEST : hashNode(this.tree, this.src);
    const nodes = (function* (v: RootView): Generator<StoredNode> {
      for (const n of postOrder(v.tree, v.src)) yield { node: exportItem(n, v.valueOf), storedHash: n.hash };
    })(this);
    return auditVersion(this, nodes, stored, options);
  }

  proof(key: Uint8Array): CommitmentProof {
    checkKey(key);
    this.guard();
    if (this.tree !== undefined) hashNode(this.tree, this.src);
    return createProof(this.tree, key, this.src, this.valueOf);
  }
}

/** The value of a leaf held in memory. */
export const memoryValue: ValueOf = (leaf) => {
  if (leaf.value === undefined) throw new IavlError("CORRUPT", "leaf without a value");
  return leaf.value;
};
