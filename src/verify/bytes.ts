/**
 * Byte helpers of the verifier: a check for Uint8Arrays of any realm, equality, byte order, concatenation, the
 * protobuf length varint and strict UTF-8. Plain JavaScript only (no Buffer, no TextEncoder), so that the verifier
 * loads in a browser, a worker or a bare `vm` context alike.
 * @module
 */

/**
 * True when `a` is a Uint8Array, including one made in another realm (an iframe, a worker, a `vm` context), whose
 * arrays fail `instanceof` here; a Node Buffer is a Uint8Array too.
 */
export function isBytes(a: unknown): a is Uint8Array {
  return a instanceof Uint8Array || (ArrayBuffer.isView(a) && a.constructor.name === "Uint8Array");
}

/** True when `a` and `b` hold the same bytes. */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** True when `a` begins with all of `prefix` (Go's `bytes.HasPrefix`: a prefix equal to `a` counts). */
export function startsWith(a: Uint8Array, prefix: Uint8Array): boolean {
  if (a.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (a[i] !== prefix[i]) return false;
  return true;
}

/** True when `a` sorts strictly before `b` in byte order (Go's `bytes.Compare(a, b) < 0`). */
export function isBefore(a: Uint8Array, b: Uint8Array): boolean {
  const n = a.length < b.length ? a.length : b.length;
  for (let i = 0; i < n; i++) {
    if (a[i] !== b[i]) return a[i]! < b[i]!;
  }
  return a.length < b.length;
}

/** The bytes of `parts` one after another, in a new array. */
export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** `n` (a length, so a non-negative integer) as a protobuf varint: seven bits a byte, low bits first. */
export function uvarint(n: number): Uint8Array {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
  return Uint8Array.from(out);
}

/**
 * The UTF-8 bytes of `s`, or undefined when `s` holds a lone surrogate: such a string has no UTF-8 form (TextEncoder
 * would silently write U+FFFD instead), so it cannot name anything a Go program committed.
 */
export function utf8(s: string): Uint8Array | undefined {
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdfff) {
      const low = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (c > 0xdbff || low < 0xdc00 || low > 0xdfff) return undefined;
      c = 0x10000 + (c - 0xd800) * 0x400 + (low - 0xdc00);
      i++;
    }
    if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 0x3f));
    else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f));
    else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 0x3f), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f));
  }
  return Uint8Array.from(out);
}
