/**
 * The application hash of several stores, as the Cosmos SDK computes `CommitInfo.Hash()` (store/types/commit_info.go):
 * a simple Merkle tree (RFC 6962, as CometBFT's `merkle.HashFromByteSlices`) over the stores sorted by name, each
 * leaf `uvarint(len name) ‖ name ‖ uvarint(32) ‖ sha256Bytes(store root hash)`.
 * @module
 */
import { concatBytes, putUvarint, utf8 } from "../base/bytes.js";
import { IavlError } from "../base/errors.js";
import { checkBytes, checkString, describe } from "../base/validate.js";
import { EMPTY_HASH, sha256Bytes } from "../base/hash.js";

/** RFC 6962 Merkle root of `items`: leaves hashed with a 0x00 prefix, inner nodes with 0x01, split at the largest power of two below n. */
export function merkleRoot(items: Uint8Array[]): Uint8Array {
  if (items.length === 0) return EMPTY_HASH;
  if (items.length === 1) return sha256Bytes(concatBytes(new Uint8Array([0]), items[0]!));
  let k = 1;
  while (k * 2 < items.length) k *= 2;
  return sha256Bytes(concatBytes(new Uint8Array([1]), merkleRoot(items.slice(0, k)), merkleRoot(items.slice(k))));
}

/** The leaf bytes of one store: its length-prefixed name and the length-prefixed sha256 of its root hash. */
export function storeLeaf(name: string, rootHash: Uint8Array): Uint8Array {
  const n = utf8(name);
  const vh = sha256Bytes(rootHash);
  const buf = new Uint8Array(20 + n.length + vh.length);
  let p = putUvarint(buf, 0, n.length);
  buf.set(n, p);
  p += n.length;
  p = putUvarint(buf, p, vh.length);
  buf.set(vh, p);
  return buf.slice(0, p + vh.length);
}

/** The app hash of stores given as name → root hash (the SDK sorts by name, byte order). */
export function commitInfoHash(stores: ReadonlyMap<string, Uint8Array>): Uint8Array {
  if (!(stores instanceof Map)) throw new IavlError("INVALID_ARGUMENT", `the stores must be a Map of name to root hash, got ${describe(stores)}`);
  for (const [name, hash] of stores) {
    checkString(name, "a store name");
    checkBytes(hash, `the root hash of store ${name}`);
  }
  const names = [...stores.keys()].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  return merkleRoot(names.map((n) => storeLeaf(n, stores.get(n)!)));
}
