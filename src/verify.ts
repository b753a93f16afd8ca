/**
 * Full verification of a committed version: every node rehashed, the structure checked, the key/value index
 * compared with the tree's leaves.
 * @module
 */
import { iavlSpec, verifyMembership } from "@confio/ics23";
import { IavlError } from "./errors.js";
import { Importer } from "./export/importer.js";
import { compareBytes, equalBytes, toHex } from "./tree/encoding.js";
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
  const mismatch = (what: string): void => {
    if (++mismatches <= MAX_MISMATCHES) faults.push(what);
  };
  const index = new IndexCursor(view);

  let complete = true;
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
      // A merge of two key-ordered streams, so that one extra or missing key is one fault, not a cascade.
      for (let p = index.peek(); p !== undefined && compareBytes(p[0], node.key) < 0; p = index.peek()) {
        mismatch(`key ${short(p[0])} is in the key/value index but not in the tree`);
        index.advance();
      }
      const p = index.peek();
      if (p === undefined || !equalBytes(p[0], node.key)) {
        mismatch(`key ${short(node.key)} is in the tree but not in the key/value index`);
      } else {
        if (!equalBytes(p[1], node.value ?? new Uint8Array(0))) mismatch(`key ${short(node.key)}: the tree's leaf value differs from the index's`);
        index.advance();
      }
    }
    for (let p = index.peek(); p !== undefined; p = index.peek()) {
      mismatch(`key ${short(p[0])} is in the key/value index but not in the tree`);
      index.advance();
    }
  } catch (e) {
    if (!(e instanceof IavlError)) throw e;
    faults.push(`${index.failed ? "reading the key/value index" : "reading the tree"}: ${e.code}: ${e.message}`);
    complete = false;
  }
  if (mismatches > MAX_MISMATCHES) faults.push(`… and ${mismatches - MAX_MISMATCHES} more leaf/index mismatches`);

  // The checks below judge the whole tree, which a walk cut short did not see.
  if (complete) {
    if (importing) {
      try {
        const root = imp.finish();
        const got = root === undefined ? EMPTY_HASH : root.hash!;
        if (!equalBytes(got, storedHash)) {
          faults.push(
            `root hash: rehashing every node gives ${toHex(got)}, but the store recorded ${toHex(storedHash)} ` +
              `(a key, value or node row no longer matches its hash)`,
          );
          faults.push(...localize(view, storedHash));
        }
      } catch (e) {
        if (!(e instanceof IavlError)) throw e;
        faults.push(`tree structure: ${e.message}`);
      }
    }
    try {
      const size = view.size;
      if (size !== leaves) faults.push(`size: the store records ${size} keys, the tree has ${leaves} leaves`);
    } catch (e) {
      if (!(e instanceof IavlError)) throw e;
      faults.push(`reading the size: ${e.code}: ${e.message}`);
    }
  }
  return { ok: faults.length === 0, version, nodes, leaves, faults };
}

/** The key/value index of a version with one pair of lookahead; `failed` tells whether an error came from it. */
class IndexCursor {
  failed = false;
  private readonly it: Iterator<[Uint8Array, Uint8Array]>;
  private head: [Uint8Array, Uint8Array] | undefined;
  private loaded = false;

  constructor(view: ReadonlyTree) {
    this.it = view.iterate();
  }

  peek(): [Uint8Array, Uint8Array] | undefined {
    if (!this.loaded) {
      try {
        const r = this.it.next();
        this.head = r.done === true ? undefined : r.value;
      } catch (e) {
        this.failed = true;
        throw e;
      }
      this.loaded = true;
    }
    return this.head;
  }

  advance(): void {
    this.loaded = false;
  }
}

/** Keys named before the search for bad leaves stops. */
const MAX_BAD_KEYS = 10;

/**
 * After a root mismatch, names the keys whose stored value no longer matches the tree: the membership proof of
 * such a key (sibling hashes from the stored nodes, the value from the index) fails against the stored root. Costs
 * a proof per key, which is why it only runs once a fault is known.
 */
function localize(view: ReadonlyTree, storedHash: Uint8Array): string[] {
  const bad: string[] = [];
  try {
    for (const [key, value] of view.iterate()) {
      if (value.length === 0) continue; // ICS23 cannot prove an empty value
      if (!verifyMembership(view.proof(key), iavlSpec, storedHash, key, value)) {
        bad.push(`key ${short(key)}: its value does not match the leaf hash the tree stores (membership proof fails)`);
        if (bad.length >= MAX_BAD_KEYS) break;
      }
    }
  } catch (e) {
    if (!(e instanceof IavlError)) throw e;
    bad.push(`locating the bad leaves stopped: ${e.code}: ${e.message}`);
  }
  return bad;
}

/** A key for a message: quoted when printable ASCII, else hex. */
function short(key: Uint8Array): string {
  if (key.length <= 64 && key.every((c) => c >= 0x20 && c < 0x7f && c !== 0x22)) return `"${String.fromCharCode(...key)}"`;
  return key.length <= 32 ? `0x${toHex(key)}` : `0x${toHex(key.subarray(0, 32))}…(${key.length} bytes)`;
}
