/**
 * The ICS23 proof messages this verifier reads (cosmos/ics23 `proofs.proto`), as plain decoded values, and the enum
 * numbers of their hash and length operations. Absent fields take proto3's defaults: empty bytes, enum 0.
 * @module
 */

/** `HashOp` numbers of `proofs.proto`; only those the supported specs use are named. */
export const HashOp = {
  NO_HASH: 0,
  SHA256: 1,
} as const;

/** `LengthOp` numbers of `proofs.proto`; only the one the supported specs use is named. */
export const LengthOp = {
  VAR_PROTO: 1,
} as const;

/** How a key and value become a leaf hash: `hash(prefix ‖ length(prehashKey(key)) ‖ length(prehashValue(value)))`. */
export interface LeafOp {
  hash: number;
  prehashKey: number;
  prehashValue: number;
  length: number;
  prefix: Uint8Array;
}

/** One step towards the root: `hash(prefix ‖ child ‖ suffix)`. */
export interface InnerOp {
  hash: number;
  prefix: Uint8Array;
  suffix: Uint8Array;
  /**
   * Whether the suffix field was on the wire at all, even empty. Go's TendermintSpec check tells a Go `nil` suffix
   * (field absent) from an empty one, so this verifier must too.
   */
  hasSuffix: boolean;
}

/** A key and value and the steps from their leaf to a root. `leaf` is undefined when the field was absent. */
export interface ExistenceProof {
  key: Uint8Array;
  value: Uint8Array;
  leaf: LeafOp | undefined;
  path: InnerOp[];
}

/** Existence proofs of the neighbours of an absent key; either may be missing at an end of the tree. */
export interface NonExistenceProof {
  /** The key the producer meant; neither reference verifier reads it, and neither does this one. */
  key: Uint8Array;
  left: ExistenceProof | undefined;
  right: ExistenceProof | undefined;
}

/** The two kinds of `CommitmentProof` this verifier accepts (batches are refused while decoding). */
export type CommitmentProof =
  | { exist: ExistenceProof; nonexist?: undefined }
  | { nonexist: NonExistenceProof; exist?: undefined };
