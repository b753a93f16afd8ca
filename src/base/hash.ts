/**
 * The IAVL node hashes (SPEC §1), byte for byte as cosmos/iavl `node.go` `writeHashBytes`.
 *
 * Inside the library a hash is a {@link Digest}: the 32 bytes as a latin1 string (one char per byte), which is what
 * node:crypto's one-shot `hash()` returns without a Buffer, and one small heap object instead of a Uint8Array's three:
 * a tree holds one per node, so this is most of what its garbage collector sees. Hashes cross the public API, and
 * SQLite, as Uint8Arrays ({@link digestBytes}, {@link toDigest}).
 * @module
 */
import { hash as nodeHash } from "node:crypto";
import { latin1, latin1Bytes, putLatin1, putUvarint, putVarint, type ByteString } from "./bytes.js";

/** A SHA-256 digest as a 32-char latin1 string (char i = byte i). */
export type Digest = string;

/** SHA-256 of `data`. */
export function sha256(data: Uint8Array): Digest {
  return nodeHash("sha256", data, "binary"); // "binary" is latin1: one char per byte
}

/** The bytes of a digest, in an array of their own. */
export function digestBytes(d: Digest): Uint8Array {
  return latin1Bytes(d);
}

/** The digest whose bytes are `b` (a hash read from storage or given by a caller). */
export function toDigest(b: Uint8Array): Digest {
  return latin1(b);
}

/** SHA-256 of `data` as bytes. */
export function sha256Bytes(data: Uint8Array): Uint8Array {
  return digestBytes(sha256(data));
}

/** The root hash of an empty tree: sha256 of nothing. */
export const EMPTY_DIGEST: Digest = sha256(new Uint8Array(0));

/** The root hash of an empty tree, as bytes (the public constant; the library never hands it out itself). */
export const EMPTY_HASH: Uint8Array = digestBytes(EMPTY_DIGEST);

// One scratch buffer for preimages: hashing is synchronous, so no two calls overlap. Views of it are kept by
// length, since a subarray per hash costs a noticeable share of the hash.
let scratch = new Uint8Array(256);
let views: Uint8Array[] = [];

function room(n: number): Uint8Array {
  if (scratch.length < n) {
    scratch = new Uint8Array(Math.max(n, scratch.length * 2));
    views = [];
  }
  return scratch;
}

function digest(len: number): Digest {
  let v = views[len];
  if (v === undefined) views[len] = v = scratch.subarray(0, len);
  return sha256(v);
}

/** Writes the 32 bytes of `d` with their uvarint length at `p`; returns the position after them. */
function putDigest(buf: Uint8Array, p: number, d: Digest): number {
  buf[p++] = 32;
  for (let i = 0; i < 32; i++) buf[p + i] = d.charCodeAt(i);
  return p + 32;
}

/** Hash of a leaf: `varint(0) ‖ varint(1) ‖ varint(version) ‖ bytes(key) ‖ bytes(sha256(value))`. */
export function leafHash(key: ByteString, valueHash: Digest, version: number): Digest {
  const buf = room(key.length + 64);
  let p = putVarint(buf, 0, 0);
  p = putVarint(buf, p, 1);
  p = putVarint(buf, p, version);
  p = putUvarint(buf, p, key.length);
  p = putLatin1(buf, p, key);
  return digest(putDigest(buf, p, valueHash));
}

/** Hash of an inner node: `varint(height) ‖ varint(size) ‖ varint(version) ‖ bytes(left) ‖ bytes(right)`. */
export function innerHash(height: number, size: number, version: number, left: Digest, right: Digest): Digest {
  const buf = room(100);
  const p = putDigest(buf, innerHead(buf, height, size, version), left);
  return digest(putDigest(buf, p, right));
}

/** {@link innerHash} of children whose hashes are the 32 bytes at `lo` and `ro` of `from` (a node slab). */
export function innerHashOf(height: number, size: number, version: number, from: Uint8Array, lo: number, ro: number): Digest {
  const buf = room(100);
  const p = innerHead(buf, height, size, version);
  buf[p] = 32;
  for (let i = 0; i < 32; i++) buf[p + 1 + i] = from[lo + i]!;
  buf[p + 33] = 32;
  for (let i = 0; i < 32; i++) buf[p + 34 + i] = from[ro + i]!;
  return digest(p + 66);
}

/** Writes an inner node's `varint(height) ‖ varint(size) ‖ varint(version)` at 0; returns the position after it. */
function innerHead(buf: Uint8Array, height: number, size: number, version: number): number {
  return smallVarint(buf, smallVarint(buf, smallVarint(buf, 0, height), size), version);
}

/** {@link putVarint} of a non-negative `n`, with integer arithmetic while it fits in 30 bits (heights, most sizes and versions). */
function smallVarint(buf: Uint8Array, p: number, n: number): number {
  if (n >= 0x40000000) return putVarint(buf, p, n);
  let z = n << 1; // zig-zag of a non-negative number
  while (z >= 0x80) {
    buf[p++] = (z & 0x7f) | 0x80;
    z >>>= 7;
  }
  buf[p++] = z;
  return p;
}
