/**
 * The wire form of a replica's feed (`GET /v1/ops`): each version's operations in order, with the root hash (and the
 * app hash of a multi-store) they led to, one length-delimited frame per version.
 *
 * A frame: the version (uvarint), the store's root hash (32 bytes), a flag byte (1: an app hash of 32 bytes
 * follows), the number of operations (uvarint), then each operation: a kind byte (1: a set, 0: a removal), the key's
 * length (uvarint) and the key, and for a set the value's length (uvarint) and the value.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { ByteReader, joinBytes, putUvarint, uvarintLength } from "../base/bytes.js";
import type { VersionOperations } from "../tree/store-contract.js";
import { frames } from "./wire.js";

/** A version of the feed: its operations and hashes. */
export interface FeedVersion extends VersionOperations {
  /** The multi-store's app hash at this version; null for a plain store. */
  appHash: Uint8Array | null;
}

/** The largest frame a reader accepts: a version of a few hundred MiB of operations is already unusual. */
export const MAX_FRAME_BYTES = 1 << 30;

const HASH_BYTES = 32;

/** The length-delimited frame of `v`. */
export function encodeFeedVersion(v: FeedVersion): Uint8Array {
  return joinBytes([...feedVersionParts(v)]);
}

/**
 * Values of at least this many bytes are parts of their own in {@link feedVersionParts}, the caller's arrays as they
 * are; smaller ones are copied in with the keys (a part each would cost more than the copy).
 */
const OWN_PART_BYTES = 1024;

/**
 * The length-delimited frame of `v` as consecutive parts: the keys, small values and lengths in arrays of their own,
 * each large value as it is, not copied. A version of the mixed profile carries ~19 MB of values: copying them into
 * one frame (twice, with its length) cost the service as long as reading them.
 */
export function* feedVersionParts(v: FeedVersion): Generator<Uint8Array> {
  const head = uvarintLength(v.version) + HASH_BYTES + 1 + (v.appHash === null ? 0 : HASH_BYTES) + uvarintLength(v.ops.length);
  let body = head;
  let own = head;
  for (const op of v.ops) {
    const n = 1 + uvarintLength(op.key.length) + op.key.length + (op.value === null ? 0 : uvarintLength(op.value.length));
    const value = op.value?.length ?? 0;
    body += n + value;
    own += n + (value < OWN_PART_BYTES ? value : 0);
  }
  const buf = new Uint8Array(uvarintLength(body) + own);
  let p = putUvarint(buf, 0, body);
  p = putUvarint(buf, p, v.version);
  buf.set(v.hash, p);
  p += HASH_BYTES;
  buf[p++] = v.appHash === null ? 0 : 1;
  if (v.appHash !== null) {
    buf.set(v.appHash, p);
    p += HASH_BYTES;
  }
  p = putUvarint(buf, p, v.ops.length);
  let from = 0;
  for (const op of v.ops) {
    buf[p++] = op.value === null ? 0 : 1;
    p = putUvarint(buf, p, op.key.length);
    buf.set(op.key, p);
    p += op.key.length;
    if (op.value === null) continue;
    p = putUvarint(buf, p, op.value.length);
    if (op.value.length < OWN_PART_BYTES) {
      buf.set(op.value, p);
      p += op.value.length;
    } else {
      yield buf.subarray(from, p);
      yield op.value;
      from = p;
    }
  }
  if (p > from) yield buf.subarray(from, p);
}

/** The versions of a feed read from `chunks`; throws `INVALID_SNAPSHOT` for a frame that does not parse or is cut. */
export async function* decodeFeed(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<FeedVersion> {
  for await (const f of frames(chunks, { maxItemBytes: MAX_FRAME_BYTES })) yield decodeFeedVersion(f.bytes, f.index);
}

/**
 * The frames of a feed read from `chunks`, each in a buffer of its own (so that it can move to another thread),
 * undecoded: {@link decodeFeedVersion} decodes one.
 */
export async function* feedFrames(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  for await (const f of frames(chunks, { maxItemBytes: MAX_FRAME_BYTES })) {
    const whole = f.bytes.byteOffset === 0 && f.bytes.byteLength === f.bytes.buffer.byteLength;
    yield whole ? f.bytes : f.bytes.slice();
  }
}

/** The version in frame `b` (the `index`th of its feed, for errors); its keys and values are views of `b`. */
export function decodeFeedVersion(b: Uint8Array, index = 0): FeedVersion {
  const bad = (): IavlError => new IavlError("INVALID_SNAPSHOT", `frame ${index} of the operations feed does not parse`);
  // Views, not copies: a frame's bytes are a chunk of the answer or a buffer of its own, neither reused, and a tree
  // copies what it keeps.
  const r = new ByteReader(b, bad);
  const version = r.uvarint();
  const hash = r.view(HASH_BYTES);
  const flag = r.byte();
  if (flag > 1) throw bad();
  const appHash = flag === 1 ? r.view(HASH_BYTES) : null;
  const count = r.uvarint();
  const ops: FeedVersion["ops"] = [];
  for (let i = 0; i < count; i++) {
    const kind = r.byte();
    if (kind > 1) throw bad();
    const key = r.view(r.uvarint());
    ops.push({ key, value: kind === 1 ? r.view(r.uvarint()) : null });
  }
  if (!r.done || version < 1) throw bad();
  return { version, hash, appHash, ops };
}
