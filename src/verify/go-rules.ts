/**
 * The checks Go's cosmos/ics23 adds for its two well-known specs and `@confio/ics23` lacks: `validateIavlOps` for
 * IavlSpec (SPEC §3) and `validateTendermintOps` for TendermintSpec. A chain's light client (ibc-go) runs the Go code,
 * so a proof that fails these would fail there too.
 * @module
 */
import type { InnerOp } from "./proof-types.js";

/** A signed varint as Go's `binary.ReadVarint` reads it: its sign, its magnitude (exact below 2^53), where it ends. */
interface GoVarint {
  negative: boolean;
  magnitude: number;
  next: number;
}

/**
 * Reads a zig-zag varint at `pos` the way Go's `binary.ReadVarint` does over a `bytes.Reader`: bytes that run out
 * (none at all, or a varint cut short) and more than 64 bits are errors (undefined). Zig-zag keeps the sign in the low
 * bit and the magnitude above it.
 */
function readGoVarint(buf: Uint8Array, pos: number): GoVarint | undefined {
  let u = 0;
  let scale = 1;
  for (let i = 0; i < 10; i++) {
    if (pos + i >= buf.length) return undefined;
    const byte = buf[pos + i]!;
    if (i === 9 && byte > 1) return undefined;
    u += (byte & 0x7f) * scale;
    if (byte < 0x80) return { negative: (buf[pos]! & 1) === 1, magnitude: Math.floor(u / 2), next: pos + i + 1 };
    scale *= 0x80;
  }
  return undefined;
}

/**
 * Go's `validateIavlOps` for the op at `layer` (0 the leaf, n the n-th inner op from it): the prefix begins with
 * three non-negative varints, height ≥ layer, size, version. A leaf has height 0, size 1 and nothing after them; an
 * inner op has 1 byte after them (its child on the left: the child's length byte) or 34 (on the right: length byte,
 * left hash, length byte). The SHA-256 demand on inner ops is the spec's own hash check.
 */
export function iavlHeaderFits(prefix: Uint8Array, layer: number): boolean {
  const height = readGoVarint(prefix, 0);
  if (height === undefined || height.negative || height.magnitude < layer) return false;
  const size = readGoVarint(prefix, height.next);
  if (size === undefined || size.negative) return false;
  const version = readGoVarint(prefix, size.next);
  if (version === undefined || version.negative) return false;
  const rest = prefix.length - version.next;
  if (layer === 0) return rest === 0 && height.magnitude === 0 && size.magnitude === 1;
  return rest === 1 || rest === 34;
}

/**
 * Go's `validateTendermintOps`: the prefix begins with 0x01 (RFC 6962's inner-node byte), and when the suffix field
 * is present at all (a Go non-nil slice, even empty) the prefix is exactly 0x01.
 */
export function tendermintInnerFits(op: InnerOp): boolean {
  if (op.prefix.length === 0 || op.prefix[0] !== 1) return false;
  return !op.hasSuffix || op.prefix.length === 1;
}
