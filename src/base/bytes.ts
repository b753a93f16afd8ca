/**
 * Byte helpers shared by hashing, proofs and storage: Go's varint encodings and byte-order comparison.
 * @module
 */
import { IavlError } from "./errors.js";

/** Writes `n` as Go's `binary.PutUvarint` into `buf` at `pos`; returns the position after it. */
export function putUvarint(buf: Uint8Array, pos: number, n: number): number {
  // Numbers here (heights, sizes, versions, lengths) stay below 2^53, so plain arithmetic is exact.
  while (n >= 0x80) {
    buf[pos++] = (n % 0x80) | 0x80;
    n = Math.floor(n / 0x80);
  }
  buf[pos++] = n;
  return pos;
}

/** How many bytes {@link putUvarint} writes for `n`. */
export function uvarintLength(n: number): number {
  let len = 1;
  for (; n >= 0x80; n = Math.floor(n / 0x80)) len++;
  return len;
}

/** Writes `n` as Go's `binary.PutVarint` (zig-zag) into `buf` at `pos`; returns the position after it. */
export function putVarint(buf: Uint8Array, pos: number, n: number): number {
  return putUvarint(buf, pos, n >= 0 ? n * 2 : -n * 2 - 1);
}

/**
 * Reads a packed record from its first byte on: bytes, Go uvarints (below 2^53) and byte strings. Anything that
 * would run past the end, or a uvarint too long, throws what `fail` makes.
 */
export class ByteReader {
  /** The position of the next byte to read. */
  pos = 0;

  constructor(
    private readonly buf: Uint8Array,
    private readonly fail: () => Error,
  ) {}

  /** True once every byte was read. */
  get done(): boolean {
    return this.pos >= this.buf.length;
  }

  byte(): number {
    const b = this.buf[this.pos++];
    if (b === undefined) throw this.fail();
    return b;
  }

  uvarint(): number {
    let n = 0;
    for (let scale = 1; ; scale *= 0x80) {
      const b = this.byte();
      if (scale > 2 ** 49) throw this.fail();
      n += (b & 0x7f) * scale;
      if (b < 0x80) return n;
    }
  }

  /** The next `len` bytes, as a view of the record (copy it to keep it apart from the record). */
  view(len: number): Uint8Array {
    if (this.pos + len > this.buf.length) throw this.fail();
    const out = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return out;
  }
}

/** The uvarint encoding of `n` as a new array. */
export function uvarint(n: number): Uint8Array {
  const buf = new Uint8Array(10);
  return buf.slice(0, putUvarint(buf, 0, n));
}

/** Lexicographic byte order, as Go's `bytes.Compare`: negative, zero or positive. */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = a.length < b.length ? a.length : b.length;
  for (let i = 0; i < n; i++) {
    const d = a[i]! - b[i]!;
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

/** True when both arrays hold the same bytes. */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Lower-case hex of `bytes`. */
export function toHex(bytes: Uint8Array): string {
  if (!(bytes instanceof Uint8Array)) throw new IavlError("INVALID_ARGUMENT", `toHex needs a Uint8Array, got ${typeof bytes}`);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}

/** Bytes of a hex string (no prefix); throws `INVALID_ARGUMENT` on anything but an even number of hex digits. */
export function fromHex(hex: string): Uint8Array {
  if (typeof hex !== "string" || hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) {
    const shown = typeof hex === "string" ? `"${hex.slice(0, 20)}${hex.length > 20 ? "…" : ""}"` : typeof hex;
    throw new IavlError("INVALID_ARGUMENT", `not a hex string (an even number of hex digits): ${shown}`);
  }
  return new Uint8Array(Buffer.from(hex, "hex"));
}

/** UTF-8 bytes of a string. */
export function utf8(s: string): Uint8Array {
  return new TextEncoder().encode(s);
}

// Buffer's own latin1 decoder, called on the array directly: wrapping the array in a Buffer first costs more than
// the decoding. Not in Node's typings, so looked up with a fallback.
const latin1Slice = (Buffer.prototype as unknown as { latin1Slice?: (this: Uint8Array, start: number, end: number) => string }).latin1Slice;

/**
 * Bytes held as a latin1 string, one char per byte: the form the tree keeps keys and hashes in. A string is one small
 * immutable heap object where a Uint8Array is three, and strings of
 * chars below 256 order as their bytes do, so `<` is Go's `bytes.Compare`.
 */
export type ByteString = string;

/** The bytes as a latin1 string, one char per byte: also the cheapest exact Map key for bytes. */
export function latin1(b: Uint8Array): ByteString {
  return latin1Of(b, 0, b.length);
}

/** Bytes `start` … `end` − 1 of `b` as a latin1 string, with no view of them made first. */
export function latin1Of(b: Uint8Array, start: number, end: number): ByteString {
  if (latin1Slice !== undefined) return latin1Slice.call(b, start, end);
  return Buffer.from(b.buffer, b.byteOffset + start, end - start).toString("latin1");
}

const latin1Write = (Buffer.prototype as unknown as { latin1Write?: (this: Uint8Array, s: string, offset: number, length: number) => number }).latin1Write;

/** Writes the bytes of `s` (a {@link ByteString}) into `buf` at `pos`; returns the position after them. */
export function putLatin1(buf: Uint8Array, pos: number, s: ByteString): number {
  if (latin1Write !== undefined && s.length > 16) return pos + latin1Write.call(buf, s, pos, s.length);
  for (let i = 0; i < s.length; i++) buf[pos + i] = s.charCodeAt(i);
  return pos + s.length;
}

/** The bytes of `s` (a {@link ByteString}) in an array of their own. */
export function latin1Bytes(s: ByteString): Uint8Array {
  const out = new Uint8Array(s.length);
  putLatin1(out, 0, s);
  return out;
}

/** Byte order of two {@link ByteString}s: negative, zero or positive. */
export function compareLatin1(a: ByteString, b: ByteString): number {
  return a === b ? 0 : a < b ? -1 : 1;
}

/** The bytes of `parts`, one after another, in a new array. */
export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  return joinBytes(parts);
}

/** {@link concatBytes} of an array of any length (a spread of one is bounded by the engine's argument limit). */
export function joinBytes(parts: readonly Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}
