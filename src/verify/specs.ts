/**
 * The two ICS23 proof specs this verifier knows, as data: `iavlSpec` (a store's IAVL tree) and `tendermintSpec` (the
 * Cosmos SDK's app hash over its stores, an RFC 6962 tree). Their numbers are those of cosmos/ics23 (`IavlSpec`,
 * `TendermintSpec` in Go, `iavlSpec`, `tendermintSpec` in `@confio/ics23`).
 *
 * Neither spec has an empty child (the placeholder of sparse trees), so the placeholder rules of Go's `IsLeftMost` /
 * `IsRightMost` never apply and are not written here; nor does either prehash keys before comparing them.
 * @module
 */
import { HashOp, LengthOp } from "./proof-types.js";

/**
 * Go's `ExistenceProof.CheckAgainstSpec` takes a spec's max depth of 0 (both specs here) as this many inner ops; the
 * JS verifier has no bound.
 */
export const DEFAULT_MAX_DEPTH = 128;

/** What a leaf op must be. */
export interface LeafSpec {
  readonly hash: number;
  readonly prehashKey: number;
  readonly prehashValue: number;
  readonly length: number;
  /** Every leaf prefix must begin with this, and no inner prefix may. */
  readonly prefix: Uint8Array;
}

/** The shape of inner nodes: how many children, how long each child's hash is, how long the fixed prefix. */
export interface InnerSpec {
  /** Where each child sits in the preimage: `[0, 1]` for a binary tree, left child first. */
  readonly childOrder: readonly number[];
  readonly childSize: number;
  readonly minPrefixLength: number;
  readonly maxPrefixLength: number;
  readonly hash: number;
}

/**
 * The rules beyond ICS23's that this verifier applies to a spec: `"iavl"`, Go's `validateIavlOps` (SPEC §3); or
 * `"tendermint"`, Go's `validateTendermintOps` and, stricter than both reference verifiers, a leaf prefix of exactly
 * `0x00` (the only one RFC 6962 and the Cosmos SDK write; a longer one would let the bytes of a store name stand in
 * for a length and so prove a shorter name).
 */
export type Family = "iavl" | "tendermint";

/** An ICS23 `ProofSpec`, with the family of extra rules it takes. */
export interface ProofSpec {
  readonly leaf: LeafSpec;
  readonly inner: InnerSpec;
  /** The bounds on the number of inner ops (Go's defaults applied). */
  readonly minDepth: number;
  readonly maxDepth: number;
  readonly family: Family;
}

const sha256Leaf: LeafSpec = Object.freeze({
  hash: HashOp.SHA256,
  prehashKey: HashOp.NO_HASH,
  prehashValue: HashOp.SHA256,
  length: LengthOp.VAR_PROTO,
  prefix: Uint8Array.of(0),
});

/**
 * IAVL: inner prefix = varint height ‖ size ‖ version ‖ 0x20 (‖ left hash ‖ 0x20 for a right child), 4 to 12 bytes
 * before any left sibling; a child is its 32-byte hash with a length byte, 33 bytes.
 */
export const iavlSpec: ProofSpec = Object.freeze({
  leaf: sha256Leaf,
  inner: Object.freeze({
    childOrder: Object.freeze([0, 1]),
    childSize: 33,
    minPrefixLength: 4,
    maxPrefixLength: 12,
    hash: HashOp.SHA256,
  }),
  minDepth: 0,
  maxDepth: DEFAULT_MAX_DEPTH,
  family: "iavl",
});

/** RFC 6962 (CometBFT's simple Merkle tree): inner prefix = 0x01 (‖ left hash for a right child); 32-byte children. */
export const tendermintSpec: ProofSpec = Object.freeze({
  leaf: sha256Leaf,
  inner: Object.freeze({
    childOrder: Object.freeze([0, 1]),
    childSize: 32,
    minPrefixLength: 1,
    maxPrefixLength: 1,
    hash: HashOp.SHA256,
  }),
  minDepth: 0,
  maxDepth: DEFAULT_MAX_DEPTH,
  family: "tendermint",
});
