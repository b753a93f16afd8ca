/**
 * Trees built in tests the way `Tree.memory()` builds them (the same Mutator over a memory node table), for tests
 * that need the tree's internals: roots, exports of a root, reads of a tree an importer rebuilt.
 */
import { latin1, latin1Bytes } from "../src/base/bytes.js";
import { digestBytes } from "../src/base/hash.js";
import type { ExportNode } from "../src/tree/export-node.js";
import { exportNodes } from "../src/tree/export-walk.js";
import type { ImportedNode } from "../src/tree/importer.js";
import { Mutator } from "../src/tree/mutate.js";
import { memorySource, NONE, NodeTable, rootDigest, type NodeSource } from "../src/tree/node.js";
import { memoryValue, RootView } from "../src/tree/root-view.js";

/** A tree over one node table that keeps every version it committed (nothing is ever freed). */
export class MutatorTree {
  readonly t = new NodeTable();
  readonly src: NodeSource = memorySource(this.t);
  readonly m: Mutator;
  root = NONE;

  constructor(version = 1) {
    this.m = new Mutator(version, this.src);
  }

  set(key: Uint8Array, value: Uint8Array): void {
    this.root = this.m.setLeaf(this.root, this.t.leaf(latin1(key), value, this.m.version));
  }

  remove(key: Uint8Array): void {
    this.root = this.m.remove(this.root, latin1(key));
  }

  /** Hashes the working tree and moves to the next version; returns the version committed. */
  commit(): number {
    rootDigest(this.src, this.root);
    this.m.takeOrphans(); // kept: every version stays readable
    return this.m.version++;
  }

  hash(root = this.root): Uint8Array {
    return digestBytes(rootDigest(this.src, root));
  }

  export(root = this.root): ExportNode[] {
    return [...exportNodes(root, this.src, memoryValue)];
  }

  view(version: number, root = this.root): RootView {
    return new RootView(version, root, this.src, memoryValue);
  }

  /** Copies a tree an importer rebuilt (and retained) into this table; returns its root here. */
  adopt(n: ImportedNode | undefined): number {
    if (n === undefined) return NONE;
    const t = this.t;
    if (n.height === 0) {
      const leaf = t.leaf(n.key, n.value, n.version);
      t.setHash(leaf, n.hash);
      return leaf;
    }
    const l = this.adopt(n.left);
    const r = this.adopt(n.right);
    const b = t.keyedBranch(latin1Bytes(n.key), n.version, n.height, n.size);
    t.setLeft(b, l);
    t.setRight(b, r);
    t.setHash(b, n.hash);
    return b;
  }
}
