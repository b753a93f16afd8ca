/**
 * Pages of JSON (`/v1/range`, `/v1/history`) written straight into one Buffer. A page is mostly hex of values; built
 * as a string it is joined from many pieces, then flattened and scanned for its UTF-8 length and encoded again on
 * the way to the socket, which cost as much as reading its rows from SQLite.
 * @module
 */

/** A piece of a JSON text: ASCII text as it is, bytes as a JSON string of lowercase hex, `null` as `null`. */
export type JsonPiece = string | Uint8Array | null;

const QUOTE = 0x22;

/** The JSON text made of `pieces`, as bytes. String pieces must be ASCII (punctuation, names, numbers). */
export function jsonBytes(pieces: readonly JsonPiece[]): Buffer {
  let size = 0;
  for (const p of pieces) size += typeof p === "string" ? p.length : p === null ? 4 : 2 * p.byteLength + 2;
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const p of pieces) {
    if (typeof p === "string") at += out.write(p, at, "latin1");
    else if (p === null) at += out.write("null", at, "latin1");
    else {
      out[at++] = QUOTE;
      at += out.write(Buffer.from(p.buffer, p.byteOffset, p.byteLength).toString("hex"), at, "latin1");
      out[at++] = QUOTE;
    }
  }
  return out;
}
