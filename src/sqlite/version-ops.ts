/**
 * The packed form of a version's operations (the `ops` column of `version_ops`): every set and remove in order, so
 * that a replay rebuilds the tree's exact shape even when a key was touched twice in one version.
 *
 * Each operation is a flags byte (bit 0: a set, else a remove; bit 1: the last operation on its key in the version,
 * which made one of the version's leaves rows), the key's length as a uvarint, and the key.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { putUvarint } from "../base/bytes.js";

/** One operation of a version. */
export interface PackedOp {
  key: Uint8Array;
  /** A set; else a remove. */
  set: boolean;
  /**
   * The last operation on its key in the version: it made a leaves row (the leaf of a set, or the removal), whose
   * id is the version's first leaf id plus the number of such operations before it.
   */
  row: boolean;
}

/** The packed bytes of `ops`. */
export function packOps(ops: readonly PackedOp[]): Uint8Array {
  let n = 0;
  for (const op of ops) n += 1 + 5 + op.key.length;
  const buf = new Uint8Array(n);
  let p = 0;
  for (const op of ops) {
    buf[p++] = (op.set ? 1 : 0) | (op.row ? 2 : 0);
    p = putUvarint(buf, p, op.key.length);
    buf.set(op.key, p);
    p += op.key.length;
  }
  return buf.slice(0, p);
}

/** The operations packed in `bytes`; throws `CORRUPT` when they do not parse. */
export function unpackOps(bytes: Uint8Array, version: number): PackedOp[] {
  const ops: PackedOp[] = [];
  let p = 0;
  while (p < bytes.length) {
    const flags = bytes[p++]!;
    let len = 0;
    let scale = 1;
    for (;;) {
      const b = bytes[p++];
      if (b === undefined || scale > 2 ** 28) throw new IavlError("CORRUPT", `the operations of version ${version} do not parse`);
      len += (b & 0x7f) * scale;
      if (b < 0x80) break;
      scale *= 0x80;
    }
    if (p + len > bytes.length || flags > 3) throw new IavlError("CORRUPT", `the operations of version ${version} do not parse`);
    ops.push({ key: bytes.slice(p, p + len), set: (flags & 1) === 1, row: (flags & 2) === 2 });
    p += len;
  }
  return ops;
}
