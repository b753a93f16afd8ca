/**
 * Byte helpers shared by hashing, proofs and storage: Go's varint encodings and byte-order comparison.
 * @module
 */

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

/** Writes `n` as Go's `binary.PutVarint` (zig-zag) into `buf` at `pos`; returns the position after it. */
export function putVarint(buf: Uint8Array, pos: number, n: number): number {
  return putUvarint(buf, pos, n >= 0 ? n * 2 : -n * 2 - 1);
}

/** The zig-zag varint encoding of `n` as a new array. */
export function varint(n: number): Uint8Array {
  const buf = new Uint8Array(10);
  return buf.slice(0, putVarint(buf, 0, n));
}

/** The uvarint encoding of `n` as a new array. */
export function uvarint(n: number): Uint8Array {
  const buf = new Uint8Array(10);
  return buf.slice(0, putUvarint(buf, 0, n));
}

/** Reads a uvarint at `pos`; returns the value and the position after it, or undefined when truncated or over 2^53. */
export function readUvarint(buf: Uint8Array, pos: number): { value: number; next: number } | undefined {
  let value = 0;
  let scale = 1;
  for (let i = pos; i < buf.length && i < pos + 8; i++) {
    const b = buf[i]!;
    value += (b & 0x7f) * scale;
    if (b < 0x80) return { value, next: i + 1 };
    scale *= 0x80;
  }
  return undefined;
}

/** Reads a zig-zag varint at `pos` (see {@link readUvarint}). */
export function readVarint(buf: Uint8Array, pos: number): { value: number; next: number } | undefined {
  const r = readUvarint(buf, pos);
  if (r === undefined) return undefined;
  const u = r.value;
  return { value: u % 2 === 0 ? u / 2 : -(u + 1) / 2, next: r.next };
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
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}

/** Bytes of a hex string (no prefix); throws on odd length or a non-hex digit. */
export function fromHex(hex: string): Uint8Array {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) throw new TypeError(`not a hex string: ${hex.slice(0, 20)}`);
  return new Uint8Array(Buffer.from(hex, "hex"));
}

/** UTF-8 bytes of a string. */
export function utf8(s: string): Uint8Array {
  return new TextEncoder().encode(s);
}

/** A string with one char per byte of `key`: the cheapest exact Map key for bytes. */
export function keyId(key: Uint8Array): string {
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString("latin1");
}

/** The bytes of `parts`, one after another, in a new array. */
export function concatBytes(...parts: Uint8Array[]): Uint8Array {
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
