/**
 * A committed version read from the store: values by key from the `kv` table, proofs from the version's tree.
 * @module
 */
import { IavlError } from "../errors.js";
import { exportNodes } from "../export/exporter.js";
import type { ExportNode } from "../export/types.js";
import { equalBytes } from "../tree/encoding.js";
import type { IterateOptions } from "../tree/iterator.js";
import { hashNode, type Node, type NodeSource } from "../tree/node.js";
import { createProof, type CommitmentProof, type ValueOf } from "../tree/proof.js";
import type { ReadonlyTree } from "../tree/snapshot.js";
import { checkBound, checkKey } from "../tree/validate.js";
import type { StoreReader, VersionRow } from "./store.js";

/** The value of a stored leaf: its own `kv` row. */
export function storedValue(store: StoreReader): ValueOf {
  return (leaf) => {
    if (leaf.value !== undefined) return leaf.value;
    const v = store.valueAt(leaf.key, leaf.version);
    if (v === undefined || v === null) throw new IavlError("CORRUPT", `the value of a leaf of version ${leaf.version} is missing`);
    return v;
  };
}

/** Reads of one committed version of a store. */
export class StoreView implements ReadonlyTree {
  constructor(
    private readonly store: StoreReader,
    private readonly row: VersionRow,
    /** Builds (or finds) the version's tree, only when a proof needs it. */
    private readonly rootOf: () => Node | undefined,
    private readonly src: NodeSource,
    /** A source that loads without caching, for one-pass walks. */
    private readonly walkSrc: NodeSource,
    /** Runs a read so that it sees the version whole, or throws when the version is gone (pruned, closed). */
    private readonly read: <T>(fn: () => T) => T,
    /** Throws when the owner was closed: checked between the rows of an iteration. */
    private readonly alive: () => void,
  ) {}

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
    return this.read(() => this.store.valueAt(key, this.row.version) ?? undefined);
  }

  has(key: Uint8Array): boolean {
    return this.get(key) !== undefined;
  }

  *iterate(opts: IterateOptions = {}): IterableIterator<[Uint8Array, Uint8Array]> {
    checkBound(opts.start, "start");
    checkBound(opts.end, "end");
    for (const entry of this.store.range(this.row.version, opts.start, opts.end, opts.reverse === true, this.read)) {
      this.alive();
      yield entry;
    }
  }

  *export(): IterableIterator<ExportNode> {
    // A walk that does not link what it loads into the tree, so that memory stays O(height). Nodes come in batches,
    // each read checked whole before any of it is handed out.
    const root = this.read(() => this.rootOf());
    const walk = exportNodes(root, this.walkSrc, storedValue(this.store));
    for (;;) {
      this.alive();
      const batch = this.read(() => {
        const out: ExportNode[] = [];
        for (let r = walk.next(); r.done !== true; r = walk.next()) if (out.push(r.value) === 256) break;
        return out;
      });
      yield* batch;
      if (batch.length < 256) return;
    }
  }

  proof(key: Uint8Array): CommitmentProof {
    checkKey(key);
    return this.read(() => {
      const root = this.rootOf();
      const h = root === undefined ? undefined : hashNode(root, this.src);
      if (h !== undefined && !equalBytes(h, this.row.hash)) {
        throw new IavlError("CORRUPT", `the rebuilt tree of version ${this.row.version} does not match its stored hash`);
      }
      return createProof(root, key, this.src, storedValue(this.store));
    });
  }
}
