/**
 * Full verification of a committed version: every node rehashed, the structure checked, the key/value index
 * compared with the tree's leaves.
 * @module
 */
import { IavlError } from "./errors.js";
import { Importer } from "./export/importer.js";
import { equalBytes, toHex } from "./tree/encoding.js";
import { EMPTY_HASH } from "./tree/hash.js";
import type { ReadonlyTree } from "./tree/snapshot.js";

/** What {@link verifyVersion} found. */
export interface VerifyReport {
  /** True when no fault was found. */
  ok: boolean;
  version: number;
  /** Nodes exported (leaves and inner nodes). */
  nodes: number;
  /** Leaves exported. */
  leaves: number;
  /** One line per fault, naming what disagrees. */
  faults: string[];
}

/** Options of {@link verifyVersion}. */
export interface VerifyOptions {
  /** Called now and then with the number of nodes checked so far. */
  onProgress?: ((nodes: number) => void) | undefined;
}

/** Leaf/index mismatches reported one by one before the rest are only counted. */
const MAX_MISMATCHES = 10;

/**
 * Verifies version `view` against `storedHash`, the root hash the store recorded for it:
 *
 * - streams {@link ReadonlyTree.export} through an {@link Importer}, which checks the AVL shape, key order, inner
 *   keys, heights and node versions and recomputes every hash from the keys and values; the resulting root hash
 *   must equal `storedHash`;
 * - walks the leaves of the export and {@link ReadonlyTree.iterate} (the key/value index) side by side: both must
 *   give the same pairs in the same order, as many as {@link ReadonlyTree.size}.
 *
 * A fault (including an `IavlError` the store raises while reading, such as `CORRUPT`) is recorded in
 * {@link VerifyReport.faults}; only other errors (I/O, SQLite) are thrown.
 */
export function verifyVersion(view: ReadonlyTree, storedHash: Uint8Array, options: VerifyOptions = {}): VerifyReport {
  const version = view.version;
  const faults: string[] = [];
  const imp = new Importer({ version, retain: false });
  let importing = true;
  let nodes = 0;
  let leaves = 0;
  let mismatches = 0;
  let exportEnded = false;
  const index = view.iterate();
  let indexDone = false;

  const mismatch = (what: string): void => {
    if (++mismatches <= MAX_MISMATCHES) faults.push(what);
  };
  const nextIndex = (): [Uint8Array, Uint8Array] | undefined => {
    if (indexDone) return undefined;
    const r = index.next();
    if (r.done === true) {
      indexDone = true;
      return undefined;
    }
    return r.value;
  };

  try {
    for (const node of view.export()) {
      if (++nodes % 4096 === 0) options.onProgress?.(nodes);
      if (importing) {
        try {
          imp.add(node);
        } catch (e) {
          // The importer refuses everything after its first refusal; keep walking to compare the leaves.
          if (!(e instanceof IavlError)) throw e;
          faults.push(`tree structure: ${e.message}`);
          importing = false;
        }
      }
      if (node.height !== 0) continue;
      leaves++;
      const pair = nextIndex();
      if (pair === undefined) {
        mismatch(`leaf ${short(node.key)} of the tree is missing from the key/value index`);
      } else if (!equalBytes(pair[0], node.key)) {
        mismatch(`leaf ${leaves - 1}: the tree has key ${short(node.key)}, the key/value index ${short(pair[0])}`);
      } else if (!equalBytes(pair[1], node.value ?? new Uint8Array(0))) {
        mismatch(`key ${short(node.key)}: the tree's leaf value differs from the key/value index's`);
      }
    }
    exportEnded = true;
  } catch (e) {
    if (!(e instanceof IavlError)) throw e;
    faults.push(`reading the tree: ${e.code}: ${e.message}`);
  }

  if (exportEnded) {
    try {
      let extra = 0;
      let first: Uint8Array | undefined;
      for (let p = nextIndex(); p !== undefined; p = nextIndex()) {
        first ??= p[0];
        extra++;
      }
      if (extra > 0) mismatch(`the key/value index has ${extra} key(s) the tree lacks, the first ${short(first!)}`);
    } catch (e) {
      if (!(e instanceof IavlError)) throw e;
      faults.push(`reading the key/value index: ${e.code}: ${e.message}`);
    }
    if (mismatches > MAX_MISMATCHES) faults.push(`… and ${mismatches - MAX_MISMATCHES} more leaf/index mismatches`);
    if (importing) {
      try {
        const root = imp.finish();
        const got = root === undefined ? EMPTY_HASH : root.hash!;
        if (!equalBytes(got, storedHash)) {
          faults.push(
            `root hash: rehashing every node gives ${toHex(got)}, but the store recorded ${toHex(storedHash)} ` +
              `(a key, value or node row no longer matches its hash)`,
          );
        }
      } catch (e) {
        if (!(e instanceof IavlError)) throw e;
        faults.push(`tree structure: ${e.message}`);
      }
    }
    let size: number | undefined;
    try {
      size = view.size;
    } catch (e) {
      if (!(e instanceof IavlError)) throw e;
      faults.push(`reading the size: ${e.code}: ${e.message}`);
    }
    if (size !== undefined && size !== leaves) faults.push(`size: the store records ${size} keys, the tree has ${leaves} leaves`);
  }
  return { ok: faults.length === 0, version, nodes, leaves, faults };
}

function short(key: Uint8Array): string {
  return key.length <= 32 ? `0x${toHex(key)}` : `0x${toHex(key.subarray(0, 32))}…(${key.length} bytes)`;
}
