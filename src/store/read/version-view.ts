/**
 * A committed version read from the store: values by key from the value rows, proofs from the version's tree.
 * @module
 */
import { IavlError } from "../../base/errors.js";
import { toDigest } from "../../base/hash.js";
import { checkKey } from "../../base/validate.js";
import type { ExportNode } from "../../tree/export-node.js";
import { NONE, rootDigest } from "../../tree/node.js";
import { createProof } from "../../tree/proof.js";
import type { AuditOptions, AuditReport, CommitmentProof, IterateOptions, ReadonlyTree } from "../../tree/readonly-tree.js";
import type { KeyChange, KeyOp } from "../../tree/store-contract.js";
import type { VersionTree } from "./rebuild.js";
import { storedValue, type VersionRead } from "./version-read.js";
import { auditStored, exportStored } from "./version-checks.js";
import { checkedPairs, confirmAbsent } from "./vouched-reads.js";

/** Rows of a version's changes read at a time. */
const CHANGES_PAGE = 512;

const EMPTY = new Uint8Array(0);

/** Reads of one committed version of a store. */
export class VersionView implements ReadonlyTree {
  private readonly row;
  private readonly store;
  private readonly read;
  private readonly alive;

  constructor(
    private readonly v: VersionRead,
    /** Builds (or finds) the version's tree, only when a proof, export or audit needs it. */
    private readonly tree: () => VersionTree,
  ) {
    this.row = v.row;
    this.store = v.store;
    this.read = v.run;
    this.alive = v.alive;
  }

  get version(): number {
    return this.row.version;
  }

  get hash(): Uint8Array {
    return this.read(() => this.row.hash.slice());
  }

  get size(): number {
    return this.read(() => this.row.size);
  }

  get(key: Uint8Array): Uint8Array | undefined {
    checkKey(key);
    const value = this.v.value(key);
    // Absence is what the tree says, not the index: a damaged index entry must not read as a missing key.
    if (value === undefined && this.row.size > 0) {
      this.read(() => {
        const { root, src } = this.tree();
        confirmAbsent(this.store.db.name, key, this.row.version, root, src);
      });
    }
    return value;
  }

  has(key: Uint8Array): boolean {
    return this.get(key) !== undefined;
  }

  /** The pairs, each vouched for by the version's tree (see vouched-reads.ts). */
  iterate(opts: IterateOptions = {}): IterableIterator<[Uint8Array, Uint8Array]> {
    return checkedPairs(this.v, opts, this.tree);
  }

  export(): IterableIterator<ExportNode> {
    return exportStored(this.v, this.tree);
  }

  audit(options?: AuditOptions): AuditReport {
    return auditStored(this.v, this.tree, options);
  }

  /** The net changes that made this version, in key order: each key it set, with its value, or removed (null). */
  *changes(): Generator<KeyChange> {
    const { firstLeaf, leafRows, version } = this.row;
    if (firstLeaf === null || leafRows === null) {
      throw new IavlError("VERSION_PRUNED", `the changes of version ${version} are not kept (an imported version, or one its store kept from before layout 2)`);
    }
    const end = firstLeaf + leafRows;
    for (let after = firstLeaf - 1; ; ) {
      this.alive();
      const page = this.read(() => this.store.leaves.changeRows(after, end, CHANGES_PAGE));
      for (const r of page) yield { key: r.key, value: r.value };
      if (page.length < CHANGES_PAGE) return;
      after = page[page.length - 1]!.id;
    }
  }

  /**
   * The operations that made this version, in the order they were applied (see {@link KeyOp}): what a replica
   * replays to reach this version's hash. `VERSION_PRUNED` when they are not kept (pruned, or an imported version).
   */
  operations(): KeyOp[] {
    const { firstLeaf, leafRows, version } = this.row;
    const log = this.read(() => this.store.versions.ops(version));
    if (log === undefined || firstLeaf === null || leafRows === null) {
      throw new IavlError("VERSION_PRUNED", `the operations of version ${version} are not kept (pruned, or an imported version)`);
    }
    const values: Array<Uint8Array | null> = [];
    const end = firstLeaf + leafRows;
    for (let after = firstLeaf - 1; ; ) {
      this.alive();
      const page = this.read(() => this.store.leaves.changeRows(after, end, CHANGES_PAGE));
      for (const r of page) values[r.id - firstLeaf] = r.value;
      if (page.length < CHANGES_PAGE) break;
      after = page[page.length - 1]!.id;
    }
    return log.ops.map((op) => {
      if (op.row === undefined) return { key: op.key, value: op.set ? EMPTY : null };
      const value = values[op.row];
      if (value === undefined || (op.set && value === null)) {
        throw new IavlError("VERSION_PRUNED", `the value of a key set in version ${version} is not kept`);
      }
      return { key: op.key, value: op.set ? value : null };
    });
  }

  proof(key: Uint8Array): CommitmentProof {
    checkKey(key);
    return this.read(() => {
      const { root, src } = this.tree();
      if (root !== NONE && rootDigest(src, root) !== toDigest(this.row.hash)) {
        throw new IavlError("CORRUPT", `the rebuilt tree of version ${this.row.version} does not match its stored hash`);
      }
      return createProof(root, key, src, storedValue(this.store));
    });
  }
}
