/**
 * The IAVL node hashes (SPEC §1), byte for byte as cosmos/iavl `node.go` `writeHashBytes`.
 * @module
 */
import { hash as nodeHash } from "node:crypto";
import { putUvarint, putVarint } from "./bytes.js";

/**
 * SHA-256 of `data`. node:crypto's one-shot `hash()` is 2–3× faster than a pure-JS SHA-256 here; asking it for a
 * latin1 string and copying into a heap Uint8Array avoids a Buffer's external allocation per hash, which the
 * benchmark measured at more than the digest itself.
 */
export function sha256(data: Uint8Array): Uint8Array {
  const s = nodeHash("sha256", data, "binary"); // "binary" is latin1: one char per byte
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = s.charCodeAt(i);
  return out;
}

/** The root hash of an empty tree: sha256 of nothing. */
export const EMPTY_HASH: Uint8Array = sha256(new Uint8Array(0));

// One scratch buffer for preimages: hashing is synchronous, so no two calls overlap. Views of it are kept by
// length, since making a subarray per hash cost as much as a tenth of the hash.
let scratch = new Uint8Array(256);
let views: Uint8Array[] = [];

function room(n: number): Uint8Array {
  if (scratch.length < n) {
    scratch = new Uint8Array(Math.max(n, scratch.length * 2));
    views = [];
  }
  return scratch;
}

function digest(len: number): Uint8Array {
  let v = views[len];
  if (v === undefined) views[len] = v = scratch.subarray(0, len);
  return sha256(v);
}

/** Hash of a leaf: `varint(0) ‖ varint(1) ‖ varint(version) ‖ bytes(key) ‖ bytes(sha256(value))`. */
export function leafHash(key: Uint8Array, valueHash: Uint8Array, version: number): Uint8Array {
  const buf = room(key.length + 64);
  let p = putVarint(buf, 0, 0);
  p = putVarint(buf, p, 1);
  p = putVarint(buf, p, version);
  p = putUvarint(buf, p, key.length);
  buf.set(key, p);
  p += key.length;
  p = putUvarint(buf, p, valueHash.length);
  buf.set(valueHash, p);
  p += valueHash.length;
  return digest(p);
}

/** Hash of an inner node: `varint(height) ‖ varint(size) ‖ varint(version) ‖ bytes(left) ‖ bytes(right)`. */
export function innerHash(height: number, size: number, version: number, left: Uint8Array, right: Uint8Array): Uint8Array {
  const buf = room(100);
  let p = putVarint(buf, 0, height);
  p = putVarint(buf, p, size);
  p = putVarint(buf, p, version);
  p = putUvarint(buf, p, left.length);
  buf.set(left, p);
  p += left.length;
  p = putUvarint(buf, p, right.length);
  buf.set(right, p);
  p += right.length;
  return digest(p);
}
