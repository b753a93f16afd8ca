/**
 * iavlite: a versioned Merkle AVL tree (IAVL) stored in SQLite, hash-exact with cosmos/iavl.
 * @packageDocumentation
 */
export { Tree, type CommitResult } from "./tree/tree.js";
export type { ReadonlyTree } from "./tree/snapshot.js";
export type { ReadOnlyStore } from "./sqlite/read-only-store.js";
export type { IterateOptions } from "./tree/iterator.js";
export type { CommitmentProof } from "./tree/proof.js";
export { IavlError, isIavlError, type ErrorCode } from "./errors.js";
export type { MemoryOptions, OpenOptions, ImportOptions } from "./options.js";
export { EMPTY_HASH } from "./tree/hash.js";
export { toHex, fromHex } from "./tree/encoding.js";
export type { ExportNode } from "./export/types.js";
export type { PruneResult, PruneProgress } from "./prune/pruner.js";
export type { PruneOptions } from "./tree/backend.js";
export { Importer, buildTree, buildTreeAsync, type ImporterOptions } from "./export/importer.js";
export {
  encodeItems,
  decodeItems,
  encodeSnapshotItems,
  decodeSnapshotItems,
  type SnapshotItem,
  type DecodeLimits,
} from "./export/wire.js";
export { MultiTree, type MultiTreeOptions, type MultiCommitResult } from "./multi/multi-tree.js";
export { commitInfoHash } from "./multi/commit-info.js";
