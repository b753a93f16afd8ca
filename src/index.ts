/**
 * iavlite: a versioned Merkle AVL tree (IAVL) stored in SQLite, hash-exact with cosmos/iavl.
 * @packageDocumentation
 */
export { Tree, type CommitResult } from "./api/tree.js";
export type { ReadonlyTree } from "./tree/readonly-tree.js";
export type { ReadOnlyStore } from "./store/read/read-only-store.js";
export type { IterateOptions } from "./tree/iterate.js";
export type { CommitmentProof } from "./tree/proof.js";
export { IavlError, isIavlError, type ErrorCode } from "./base/errors.js";
export type { MemoryOptions, OpenOptions, ImportOptions } from "./api/options.js";
export { EMPTY_HASH } from "./base/hash.js";
export { toHex, fromHex } from "./base/bytes.js";
export type { ExportNode } from "./tree/export-node.js";
export type { KeyChange, VersionChange } from "./tree/diff.js";
export type { AuditReport, AuditOptions } from "./tree/audit.js";
export type { PruneResult, PruneProgress } from "./prune/pruner.js";
export type { PruneOptions } from "./api/backend.js";
export { Importer, buildTree, buildTreeAsync, type ImporterOptions } from "./tree/importer.js";
export {
  encodeItems,
  decodeItems,
  encodeSnapshotItems,
  decodeSnapshotItems,
  type SnapshotItem,
  type DecodeLimits,
} from "./sync/wire.js";
export { MultiTree, type MultiTreeOptions, type MultiCommitResult } from "./api/multi-tree.js";
export { commitInfoHash } from "./api/commit-info.js";
export { MultiReader, multiStoreNames, type MultiReadOptions } from "./api/multi-reader.js";
export { appProof } from "./api/app-proof.js";
