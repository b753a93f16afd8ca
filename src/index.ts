/**
 * iavlite: a versioned Merkle AVL tree (IAVL) stored in SQLite, hash-exact with cosmos/iavl.
 * @packageDocumentation
 */
export { Tree, type CommitResult } from "./api/tree.js";
export type { ReadonlyTree, IterateOptions, CommitmentProof, AuditReport, AuditOptions } from "./tree/readonly-tree.js";
export type { ReadOnlyStore } from "./store/read/read-only-store.js";
export { IavlError, isIavlError, type ErrorCode } from "./base/errors.js";
export { MAX_KEY_BYTES, MAX_VALUE_BYTES } from "./base/validate.js";
export type { MemoryOptions, OpenOptions, ImportOptions } from "./api/options.js";
export { EMPTY_HASH } from "./base/hash.js";
export { toHex, fromHex } from "./base/bytes.js";
export type { ExportNode } from "./tree/export-node.js";
export type { HistoryEntry, HistoryOptions, KeyChange, KeyHistory, KeyOp, VersionChange, VersionOperations } from "./tree/store-contract.js";
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
export { MultiTree, type MultiCommitResult } from "./api/multi-tree.js";
export type { MultiTreeOptions, MultiReadOptions } from "./api/multi-options.js";
export { commitInfoHash } from "./api/commit-info.js";
export { MultiReader } from "./api/multi-reader.js";
export { multiStoreNames } from "./api/multi-folder.js";
export { appProof } from "./api/app-proof.js";
export { follow, type FollowOptions } from "./replica/follower.js";
export { encodeFeedVersion, decodeFeed, type FeedVersion } from "./sync/ops-wire.js";
