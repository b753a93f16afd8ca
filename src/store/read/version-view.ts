/**
 * A committed version read from the store: values by key from the value rows, proofs from the version's tree.
 * @module
 */
import { latin1, latin1Bytes, toHex } from "../../base/bytes.js";
import { IavlError } from "../../base/errors.js";
import { toDigest } from "../../base/hash.js";
import { checkIterateOptions, checkKey } from "../../base/validate.js";
import { auditVersion } from "../../tree/audit.js";
import type { ExportNode } from "../../tree/export-node.js";
import { NONE, rootDigest } from "../../tree/node.js";
import { createProof } from "../../tree/proof.js";
import { iterateLeaves } from "../../tree/iterate.js";
import { pinnedWalk } from "../../tree/node-table.js";
import { findLeaf } from "../../tree/read.js";
import type { AuditOptions, AuditReport, CommitmentProof, IterateOptions, ReadonlyTree } from "../../tree/readonly-tree.js";
import type { KeyChange, KeyOp } from "../../tree/store-contract.js";
import type { VersionTree } from "./rebuild.js";
import { missingFromIndex, storedValue, type VersionRead } from "./version-read.js";
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
    const value = this.v.value(key);
    // Absence is what the tree says, not the index: a damaged index entry must not read as a missing key.
    if (value === undefined && this.row.size > 0) {
      const { root, src } = this.read(() => this.tree());
      if (this.read(() => findLeaf(root, latin1(key), src)) !== NONE) throw missingFromIndex(this.store.db.name, key, this.row.version);
    }
    return value;
  }

  has(key: Uint8Array): boolean {
    return this.get(key) !== undefined;
  }

  /**
   * The pairs come from the index of values, each checked against the leaf the version's tree has at that place (the
   * same key, and the row of the leaf's version): a damaged index entry cannot drop, add or age a pair unseen.
   */
  iterate(opts: IterateOptions = {}): IterableIterator<[Uint8Array, Uint8Array]> {
    checkIterateOptions(opts);
    const tree = this.read(() => this.tree());
    return pinnedWalk(tree.src.t, () => this.entries(opts, tree));
  }

  /** The pairs of the index of values; with `tree`, each checked against the tree's leaves (see {@link iterate}). */
  private *entries(opts: IterateOptions, tree?: VersionTree): Generator<[Uint8Array, Uint8Array]> {
    const leaves = tree === undefined ? undefined : iterateLeaves(tree.root, opts, tree.src, () => undefined);
    const nextLeaf = (): number | undefined => {
      try {
        const r = leaves!.next();
        return r.done === true ? undefined : r.value;
      } catch (e) {
        // A node the walk needed is gone: pruned under it (the read says so), or damage.
        return this.read(() => {
          throw e;
        });
      }
    };
    for (const [key, value, rowVersion] of this.store.leaves.range(this.row.version, opts.start, opts.end, opts.reverse === true, this.read, tree !== undefined)) {
      this.alive();
      if (tree !== undefined) {
        const leaf = nextLeaf();
        if (leaf === undefined || tree.src.t.key(leaf) !== latin1(key) || tree.src.t.version(leaf) !== rowVersion) {
          throw this.indexDiffers(leaf === undefined ? `no more leaves where the index has key ${toHex(key)}` : `leaf ${toHex(latin1Bytes(tree.src.t.key(leaf)))} of version ${tree.src.t.version(leaf)} where the index has key ${toHex(key)} of version ${rowVersion}`);
        }
      }
      yield [key, value];
    }
    if (tree !== undefined) {
      const leaf = nextLeaf();
      if (leaf !== undefined) throw this.indexDiffers(`leaf ${toHex(latin1Bytes(tree.src.t.key(leaf)))} past the index's last key`);
    }
  }

  private indexDiffers(what: string): IavlError {
    return new IavlError("CORRUPT", `${this.store.db.name}: the index of values of version ${this.row.version} differs from its tree: ${what}; the file is damaged (iavlite verify finds what else is)`);
  }

  *export(): IterableIterator<ExportNode> {
    for (const n of walkStored(this.v, this.read(() => this.tree()), false)) yield n.node;
  }

  audit(options?: AuditOptions): AuditReport {
    // The key/value index as stored: the audit compares it with the tree's leaves and rehashes those.
    const view = this;
    const asStored = { version: this.version, get size() { return view.size; }, iterate: () => this.entries({}) };
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
