/**
 * Auditing one committed version: every node rehashed and compared with the hash stored for it, the structure
 * checked, and the key/value index compared with the tree's leaves.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { compareBytes, equalBytes, toHex } from "../base/bytes.js";
import { digestBytes, EMPTY_DIGEST, type Digest } from "../base/hash.js";
import type { ExportNode } from "./export-node.js";
import { Importer } from "./importer.js";
import type { AuditOptions, AuditReport } from "./readonly-tree.js";

/** A node of the version in post-order, with the hash its storage holds for it (undefined: none kept apart). */
export interface StoredNode {
  node: ExportNode;
  storedHash: Digest | undefined;
}

/** What an audit reads of the version besides its nodes: its number, its key count and its key/value index. */
export interface AuditedVersion {
  readonly version: number;
  readonly size: number;
  iterate(): Iterator<[Uint8Array, Uint8Array]>;
}

/** Faults of one kind named one by one before the rest are only counted. */
const MAX_LISTED = 10;

/**
 * Audits `view` (whose nodes in post-order, with their stored hashes, are `nodes`) against `storedHash`, the root
 * hash recorded for the version:
 *
 * - every node goes through an {@link Importer}, which checks the AVL shape, key order, inner keys, heights and node
 *   versions and recomputes each hash from the keys and values; each recomputed hash must equal the stored one (a
 *   stored hash that no longer matches would make the next commit above it publish a wrong root hash), and the
 *   root's must equal `storedHash`;
 * - the leaves and `view.iterate()` (the key/value index) must give the same pairs in the same order, as many as
 *   `view.size`.
 *
 * A fault (including an `IavlError` the store raises while reading, such as `CORRUPT`) is recorded in
 * {@link AuditReport.faults}; only other errors (I/O, SQLite) are thrown.
 */
export function auditVersion(view: AuditedVersion, nodes: Iterable<StoredNode>, storedHash: Digest, options: AuditOptions = {}): AuditReport {
  const version = view.version;
  const faults: string[] = [];
  const counts = { mismatch: 0, hash: 0 };
  const listed = (kind: keyof typeof counts, what: string): void => {
    if (++counts[kind] <= MAX_LISTED) faults.push(what);
  };
  const imp = new Importer({ version, retain: false });
  let importing = true;
  let count = 0;
  let leaves = 0;
  const index = new IndexCursor(view);
  let complete = true;
  try {
    for (const { node, storedHash: stored } of nodes) {
      if (++count % 4096 === 0) options.onProgress?.(count);
      if (importing) {
        try {
          const h = imp.addNode(node);
          if (stored !== undefined && h !== stored) listed("hash", hashFault(node, stored, h));
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
        listed("mismatch", `key ${short(p[0])} is in the key/value index but not in the tree`);
        index.advance();
      }
      const p = index.peek();
      if (p === undefined || !equalBytes(p[0], node.key)) {
        listed("mismatch", `key ${short(node.key)} is in the tree but not in the key/value index`);
      } else {
        if (!equalBytes(p[1], node.value ?? new Uint8Array(0))) listed("mismatch", `key ${short(node.key)}: the tree's leaf value differs from the index's`);
        index.advance();
      }
    }
    for (let p = index.peek(); p !== undefined; p = index.peek()) {
      listed("mismatch", `key ${short(p[0])} is in the key/value index but not in the tree`);
      index.advance();
    }
  } catch (e) {
    if (!(e instanceof IavlError)) throw e;
    faults.push(`${index.failed ? "reading the key/value index" : "reading the tree"}: ${e.code}: ${e.message}`);
    complete = false;
  }
  if (counts.hash > MAX_LISTED) faults.push(`… and ${counts.hash - MAX_LISTED} more nodes whose stored hash does not match`);
  if (counts.mismatch > MAX_LISTED) faults.push(`… and ${counts.mismatch - MAX_LISTED} more leaf/index mismatches`);

  // The checks below judge the whole tree, which a walk cut short did not see.
  if (complete) {
    if (importing) {
      try {
        const root = imp.finish();
        const got = root?.hash ?? EMPTY_DIGEST;
        if (got !== storedHash) {
          faults.push(
            `root hash: rehashing every node gives ${hex(got)}, but the store recorded ${hex(storedHash)} ` +
              `(a key, value or node row no longer matches its hash)`,
          );
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
  return { ok: faults.length === 0, version, nodes: count, leaves, faults };
}

function hex(d: Digest): string {
  return toHex(digestBytes(d));
}

function hashFault(node: ExportNode, stored: Digest, rehashed: Digest): string {
  const got = `(stored hash ${hex(stored)}, rehashed ${hex(rehashed)})`;
  if (node.height === 0) return `key ${short(node.key)}: its value does not match the leaf hash the tree stores, version ${node.version} ${got}`;
  return `branch of version ${node.version}, height ${node.height}, key ${short(node.key)}: its stored hash is not the hash of its children ${got}`;
}

/** The key/value index of a version with one pair of lookahead; `failed` tells whether an error came from it. */
class IndexCursor {
  failed = false;
  private readonly it: Iterator<[Uint8Array, Uint8Array]>;
  private head: [Uint8Array, Uint8Array] | undefined;
  private loaded = false;

  constructor(view: AuditedVersion) {
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

/** A key for a message: quoted when printable ASCII, else hex. */
function short(key: Uint8Array): string {
  if (key.length <= 64 && key.every((c) => c >= 0x20 && c < 0x7f && c !== 0x22)) return `"${String.fromCharCode(...key)}"`;
  return key.length <= 32 ? `0x${toHex(key)}` : `0x${toHex(key.subarray(0, 32))}…(${key.length} bytes)`;
}
