/**
 * Applies ICS23 leaf and inner ops: the hashing that takes a key and value to a root. Only the operations of the
 * supported specs are implemented (SHA-256, no prehash, protobuf varint lengths); any other makes the op refuse,
 * though a proof only gets here after its ops matched the spec.
 * @module
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { concatBytes, uvarint } from "./bytes.js";
import { HashOp, LengthOp, type InnerOp, type LeafOp } from "./proof-types.js";

/** `data` hashed by `op`, or undefined for a hash this verifier does not support (every one but SHA-256). */
function digest(op: number, data: Uint8Array): Uint8Array | undefined {
  return op === HashOp.SHA256 ? sha256(data) : undefined;
}

/** `data` prehashed by `op` (NO_HASH leaves it as it is) and prefixed with its length as `length` says. */
function leafPart(op: number, length: number, data: Uint8Array): Uint8Array | undefined {
  const hashed = op === HashOp.NO_HASH ? data : digest(op, data);
  if (hashed === undefined || length !== LengthOp.VAR_PROTO) return undefined;
  return concatBytes(uvarint(hashed.length), hashed);
}

/**
 * The leaf hash of `key` and `value` under `leaf`, or undefined when the op is unsupported or the key or value is
 * empty (both reference verifiers refuse those: an empty value cannot be proven).
 */
export function applyLeaf(leaf: LeafOp, key: Uint8Array, value: Uint8Array): Uint8Array | undefined {
  if (key.length === 0 || value.length === 0) return undefined;
  const k = leafPart(leaf.prehashKey, leaf.length, key);
  const v = leafPart(leaf.prehashValue, leaf.length, value);
  if (k === undefined || v === undefined) return undefined;
  return digest(leaf.hash, concatBytes(leaf.prefix, k, v));
}

/** The hash of the step `op` over `child`, or undefined when the op is unsupported or the child empty. */
export function applyInner(op: InnerOp, child: Uint8Array): Uint8Array | undefined {
  if (child.length === 0) return undefined;
  return digest(op.hash, concatBytes(op.prefix, child, op.suffix));
}
