/**
 * A committed version read from the store: values by key from the value rows, proofs from the version's tree.
 * @module
 */
import { IavlError } from "../../base/errors.js";
import { latin1Bytes } from "../../base/bytes.js";
import { toDigest } from "../../base/hash.js";
import { checkIterateOptions, checkKey } from "../../base/validate.js";
import { auditVersion, type StoredNode } from "../../tree/audit.js";
import type { ExportNode } from "../../tree/export-node.js";
import { pinnedWalk } from "../../tree/node-table.js";
import { NONE, rootDigest } from "../../tree/node.js";
import { createProof } from "../../tree/proof.js";
import type { ReadonlyTree } from "../../tree/readonly-tree.js";
import type { VersionRow } from "../../sqlite/rows.js";
import type { StoreReader } from "../../sqlite/store-reader.js";
import { leafSource } from "./leaf-stream.js";
import type { VersionTree } from "./rebuild.js";
import { walkVersion } from "./version-walk.js";
import type { KeyChange, ValueOf } from "../../tree/store-contract.js";
import { type AuditOptions, type AuditReport, type CommitmentProof, type IterateOptions } from "../../tree/readonly-tree.js";

/** The value of a stored leaf: its own value row. */
export function storedValue(store: StoreReader): ValueOf {
  return (t, leaf) => {
    const held = t.value(leaf);
    if (held !== undefined) return held;
    const v = store.leaves.valueAt(latin1Bytes(t.key(leaf)), t.version(leaf));
    if (v === undefined || v === null) throw new IavlError("CORRUPT", `the value of a leaf of version ${t.version(leaf)} is missing`);
    return v;
  };
}

/** Rows of a version's changes read at a time. */
const CHANGES_PAGE = 512;

/** A version row, and the count of rollbacks the store had recorded before the row was read. */
export interface ReadStart {
  row: VersionRow;
  since: number;
}

/**
 * Reads the row of `version` to begin reading it; throws `VERSION_PRUNED` or `VERSION_NOT_FOUND` when it is not kept.
 * `since`: the rollbacks counted when a longer read (a change stream over many versions) began, so that a rollback
 * during it shows in every version it reads after, not only in the one being read.
 */
export function startRead(store: StoreReader, version: number, since = store.versions.rollbacks()): ReadStart {
  // The count first (the default above): a rollback between the two reads then shows as a later one.
  const row = store.versions.row(version);
  if (row === undefined) throw store.versions.missing(version);
  return { row, since };
}

/** Reads of one committed version of a store. */
export class VersionView implements ReadonlyTree {
  private readonly row: VersionRow;
  /** Rollbacks the store had recorded when this view began: one after that below the version replaces it. */
  private readonly since: number;

  constructor(
    private readonly store: StoreReader,
    start: ReadStart,
    /** Builds (or finds) the version's tree, only when a proof, export or audit needs it. */
    private readonly tree: () => VersionTree,
    /** Throws when the owner was closed: checked before every read and between the rows of an iteration. */
    private readonly alive: () => void,
  ) {
    this.row = start.row;
    this.since = start.since;
  }

  /**
   * Runs a read so that it sees the version whole, or throws `VERSION_PRUNED` / `VERSION_ROLLED_BACK`: pruning
   * deletes a version row before any data the version reads, and a rollback records itself with its deletions, so a
   * version still "kept" after the read proves the read saw it whole.
   */
  private readonly read = <T>(fn: () => T): T => {
    this.alive();
    let r: T;
    try {
      r = fn();
    } catch (e) {
      this.check();
      throw e;
    }
    this.check();
    return r;
  };

  private check(): void {
    const state = this.store.versions.state(this.row.version, this.since);
    if (state === "pruned") throw new IavlError("VERSION_PRUNED", `version ${this.row.version} was pruned while it was being read`);
    if (state === "rolled-back") {
      throw new IavlError("VERSION_ROLLED_BACK", `version ${this.row.version} was removed by a rollback after this view began reading it`);
    }
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
    return this.read(() => this.store.leaves.valueAt(key, this.row.version) ?? undefined);
  }

  has(key: Uint8Array): boolean {
    return this.get(key) !== undefined;
  }

  *iterate(opts: IterateOptions = {}): IterableIterator<[Uint8Array, Uint8Array]> {
    checkIterateOptions(opts);
    for (const [key, value] of this.store.leaves.range(this.row.version, opts.start, opts.end, opts.reverse === true, this.read)) {
      this.alive();
      yield [key, value];
    }
  }

  *export(): IterableIterator<ExportNode> {
    for (const n of this.walk(false)) yield n.node;
  }

  audit(options?: AuditOptions): AuditReport {
    return auditVersion(this, this.walk(true), this.read(() => toDigest(this.row.hash)), options);
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

  /**
   * The version's nodes in post-order, read in batches (version-walk.ts), each batch's reads checked whole. The tree's
   * table is pinned while the walk is open: the part of the tree not yet stored is walked in memory, and its owner may
   * go on committing meanwhile.
   */
  private walk(withHashes: boolean): IterableIterator<StoredNode> {
    const tree = this.read(() => this.tree());
    return pinnedWalk(tree.src.t, () => this.walkTree(tree, withHashes));
  }

  private *walkTree({ root, src }: VersionTree, withHashes: boolean): Generator<StoredNode> {
    const leaves = leafSource(this.store, this.store.db.name, this.row.version, this.since, this.row.size, this.read);
    try {
      for (const batch of walkVersion(src.t, root, this.store, leaves, this.read, withHashes)) {
        this.alive();
        yield* batch;
      }
    } finally {
      leaves.close();
    }
  }
}
