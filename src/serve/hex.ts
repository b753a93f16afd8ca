/**
 * Bytes on the wire: lowercase hex without `0x` in the v1 API, base64 and hex as CometBFT writes them in its RPC.
 * @module
 */
import { toHex } from "../base/bytes.js";
import { IavlError } from "../base/errors.js";

export { toHex };

const HEX = /^[0-9a-fA-F]*$/;

/**
 * Bytes of hex `text` (either case; a `0x` prefix is accepted). Throws `INVALID_ARGUMENT` naming `what` when it is not
 * hex, or when it decodes to more than `maxBytes`.
 */
export function parseHex(text: string, what: string, maxBytes: number): Uint8Array {
  const h = text.startsWith("0x") || text.startsWith("0X") ? text.slice(2) : text;
  if (h.length % 2 !== 0 || !HEX.test(h)) {
    throw new IavlError("INVALID_ARGUMENT", `${what} is not hex (an even number of digits 0-9 a-f): "${text.slice(0, 24)}${text.length > 24 ? "…" : ""}"`);
  }
  if (h.length / 2 > maxBytes) throw new IavlError("INVALID_ARGUMENT", `${what} is ${h.length / 2} bytes, more than the ${maxBytes} allowed`);
  return new Uint8Array(Buffer.from(h, "hex"));
}

/** `bytes` hex-encoded, or null. */
export function hexOrNull(bytes: Uint8Array | null | undefined): string | null {
  return bytes === null || bytes === undefined ? null : toHex(bytes);
}

/** Base64 of `bytes`, as CometBFT's JSON writes byte slices. */
export function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

/** Upper-case hex, as CometBFT's JSON writes its `HexBytes` (hashes, addresses). */
export function upperHex(bytes: Uint8Array): string {
  return toHex(bytes).toUpperCase();
}
