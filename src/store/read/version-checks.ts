/**
 * The reads of a stored version that walk its whole tree: its export, and its audit against the stored hashes and
 * the index of values (read as stored, so that the audit names each fault itself).
 * @module
 */
import { toDigest } from "../../base/hash.js";
import { auditVersion } from "../../tree/audit.js";
import type { ExportNode } from "../../tree/export-node.js";
import type { AuditOptions, AuditReport } from "../../tree/readonly-tree.js";
import type { VersionTree } from "./rebuild.js";
import type { VersionRead } from "./version-read.js";
import { walkStored } from "./version-walk.js";
import { indexPairs } from "./vouched-reads.js";

/** The nodes of version `v` (whose tree `tree` builds) in post-order, as a snapshot carries them. */
export function* exportStored(v: VersionRead, tree: () => VersionTree): Generator<ExportNode> {
  for (const n of walkStored(v, v.run(tree), false)) yield n.node;
}

/** The audit of version `v`: every node rehashed against its stored hash, and the index compared with the leaves. */
export function auditStored(v: VersionRead, tree: () => VersionTree, options?: AuditOptions): AuditReport {
  const indexed = { version: v.row.version, size: v.row.size, iterate: () => indexPairs(v, {}, undefined) };
  return auditVersion(indexed, walkStored(v, v.run(tree), true), v.run(() => toDigest(v.row.hash)), options);
}
