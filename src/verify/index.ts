/**
 * `iavlite/verify`: checks ICS23 proofs of an IAVL store, and of a store's hash inside a Cosmos SDK app hash, with no
 * Node APIs and no dependency but `@noble/hashes`, so it runs in browsers, workers and any JavaScript runtime.
 *
 * It applies the rules of `@confio/ics23` for `iavlSpec` and `tendermintSpec` together with those Go's cosmos/ics23
 * adds (ibc-go runs the Go code): for IAVL, `validateIavlOps` (leaf prefix = three varints with height 0 and size 1;
 * inner height ≥ its layer; 1 or 34 bytes after an inner header; SHA-256); at most 128 steps; whole-child suffixes;
 * no inner prefix that begins with the leaf prefix. It is stricter than both in a few places that well-formed proofs
 * never reach: malformed or ambiguous protobuf is refused, batch proofs are refused (Go dropped them), and an app-level
 * leaf prefix must be exactly `0x00`.
 *
 * Every function is synchronous, returns `true` only for a proof it verified, and returns `false` for anything else,
 * whatever it is given: it never throws.
 *
 * ```ts
 * import { verifyMembership, verifyStoreInApp } from "iavlite/verify";
 * const ok = verifyStoreInApp(appProof, appHash, "bank", storeHash) && verifyMembership(proof, storeHash, key, value);
 * ```
 * @module
 */
import { isBytes, utf8 } from "./bytes.js";
import { decodeCommitmentProof } from "./decode-proof.js";
import { iavlSpec, tendermintSpec } from "./specs.js";
import { verifyExistence } from "./verify-existence.js";
import { verifyNonExistence } from "./verify-nonexistence.js";

/**
 * True when `proof` (the protobuf bytes of an ICS23 `CommitmentProof` holding an existence proof, as
 * `ics23.CommitmentProof.encode(p).finish()` writes it, or `tree.at(v).proof(key)` encoded) proves that `key` holds
 * `value` in the IAVL tree whose root hash is `root`. False for anything else, including any argument that is not a
 * Uint8Array; never throws.
 */
export function verifyMembership(proof: Uint8Array, root: Uint8Array, key: Uint8Array, value: Uint8Array): boolean {
  try {
    if (!isBytes(proof) || !isBytes(root) || !isBytes(key) || !isBytes(value)) return false;
    const p = decodeCommitmentProof(proof);
    return p?.exist !== undefined && verifyExistence(p.exist, iavlSpec, root, key, value);
  } catch {
    return false;
  }
}

/**
 * True when `proof` (the protobuf bytes of an ICS23 `CommitmentProof` holding a non-existence proof) proves that `key`
 * is absent from the IAVL tree whose root hash is `root`: it holds existence proofs of the keys just before and just
 * after `key` (one of them only at an end of the tree). False for anything else; never throws.
 */
export function verifyNonMembership(proof: Uint8Array, root: Uint8Array, key: Uint8Array): boolean {
  try {
    if (!isBytes(proof) || !isBytes(root) || !isBytes(key)) return false;
    const p = decodeCommitmentProof(proof);
    return p?.nonexist !== undefined && verifyNonExistence(p.nonexist, iavlSpec, root, key);
  } catch {
    return false;
  }
}

/**
 * True when `appProof` (the protobuf bytes of an ICS23 `CommitmentProof` under `tendermintSpec`: the second proof a
 * Cosmos SDK multistore query returns) proves that the store named `storeName` has root hash `storeHash` in the app
 * whose hash is `appHash`, the SDK's `CommitInfo` hash: an RFC 6962 tree over the stores sorted by name, whose leaves
 * are `uvarint(len name) ‖ name ‖ uvarint(32) ‖ sha256(store hash)`. The key is the UTF-8 of `storeName` (a name with
 * a lone surrogate has none and is refused). Check `storeHash` here, then a key of the store against it with
 * {@link verifyMembership} or {@link verifyNonMembership}. False for anything else; never throws.
 */
export function verifyStoreInApp(
  appProof: Uint8Array,
  appHash: Uint8Array,
  storeName: string,
  storeHash: Uint8Array,
): boolean {
  try {
    if (!isBytes(appProof) || !isBytes(appHash) || typeof storeName !== "string" || !isBytes(storeHash)) return false;
    const key = utf8(storeName);
    if (key === undefined) return false;
    const p = decodeCommitmentProof(appProof);
    return p?.exist !== undefined && verifyExistence(p.exist, tendermintSpec, appHash, key, storeHash);
  } catch {
    return false;
  }
}
