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

const NO_VALUE = new Uint8Array(0);

function pruned(version: number): IavlError {
  return new IavlError("VERSION_PRUNED", `version ${version} was pruned while it was being read`);
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
    /** Throws when the owner was closed: checked before every read and between the rows of an iteration. */
    private readonly alive: () => void,
  ) {}

  /**
   * Runs a read so that it sees the version whole, or throws `VERSION_PRUNED`. A prune deletes the version row
   * before any data the version reads, so a row still present after the read proves the read saw the version whole.
   */
  private readonly read = <T>(fn: () => T): T => {
    this.alive();
    let r: T;
    try {
      r = fn();
    } catch (e) {
      if (this.store.version(this.row.version) === undefined) throw pruned(this.row.version);
      throw e;
    }
    if (this.store.version(this.row.version) === undefined) throw pruned(this.row.version);
    return r;
  };

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
    for (const [key, value] of this.store.range(this.row.version, opts.start, opts.end, opts.reverse === true, this.read)) {
      this.alive();
      yield [key, value];
    }
  }

  *export(): IterableIterator<ExportNode> {
    // Leaves come out in key order, which is the order of the version's value rows: they are read from one range
    // scan instead of two lookups each, and only branches are loaded node by node (without linking them into the
    // tree, so that memory stays O(height)). Nodes come in batches, each read checked whole before it is handed out.
    const root = this.read(() => this.rootOf());
    const walk = exportNodes(root, this.walkSrc, () => NO_VALUE);
    const leaves = this.store.range(this.row.version, undefined, undefined, false, this.read);
    for (;;) {
      this.alive();
      const batch = this.read(() => {
        const out: ExportNode[] = [];
        for (let r = walk.next(); r.done !== true; r = walk.next()) {
          const n = r.value;
          if (n.height === 0) {
            const row = leaves.next();
            if (row.done === true || row.value[2] !== n.version || (n.key.length > 0 && !equalBytes(n.key, row.value[0]))) {
              throw new IavlError("CORRUPT", `the leaves of version ${this.row.version} disagree with its value rows`);
            }
            out.push({ key: row.value[0], value: row.value[1], version: n.version, height: 0 });
          } else out.push(n);
          if (out.length === 256) break;
        }
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
