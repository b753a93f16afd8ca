/**
 * A committed version read from the store: values by key from the value rows, proofs from the version's tree.
 * @module
 */
import { IavlError } from "../../base/errors.js";
import { toDigest } from "../../base/hash.js";
import { checkIterateOptions, checkKey } from "../../base/validate.js";
import { auditVersion } from "../../tree/audit.js";
import type { ExportNode } from "../../tree/export-node.js";
import { NONE, rootDigest } from "../../tree/node.js";
import { createProof } from "../../tree/proof.js";
import type { AuditOptions, AuditReport, CommitmentProof, IterateOptions, ReadonlyTree } from "../../tree/readonly-tree.js";
import type { KeyChange, KeyOp } from "../../tree/store-contract.js";
import type { VersionTree } from "./rebuild.js";
import { storedValue, type VersionRead } from "./version-read.js";
import { walkStored } from "./version-walk.js";

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
    return this.v.value(key);
  }

  has(key: Uint8Array): boolean {
    return this.get(key) !== undefined;
  }

  iterate(opts: IterateOptions = {}): IterableIterator<[Uint8Array, Uint8Array]> {
    checkIterateOptions(opts);
    return this.entries(opts, true);
  }

  private *entries(opts: IterateOptions, checked: boolean): Generator<[Uint8Array, Uint8Array]> {
    for (const [key, value] of this.store.leaves.range(this.row.version, opts.start, opts.end, opts.reverse === true, this.read, checked)) {
      this.alive();
      yield [key, value];
    }
  }

  *export(): IterableIterator<ExportNode> {
    for (const n of walkStored(this.v, this.read(() => this.tree()), false)) yield n.node;
  }

  audit(options?: AuditOptions): AuditReport {
    // The key/value index as stored: the audit compares it with the tree's leaves and rehashes those.
    const view = this;
    const asStored = { version: this.version, get size() { return view.size; }, iterate: () => this.entries({}, false) };
    return auditVersion(asStored, walkStored(this.v, this.read(() => this.tree()), true), this.read(() => toDigest(this.row.hash)), options);
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
