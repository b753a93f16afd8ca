/**
 * The packed form of a version's operations (the `ops` column of `version_ops`): every set and remove in order, so
 * that a replay rebuilds the tree's exact shape even when a key was touched twice in one version.
 *
 * Each operation is a flags byte (bit 0: a set, else a remove; bit 1: it made one of the version's leaves rows),
 * the key's length as a uvarint, the key, and, with bit 1, the row's place among the version's rows as a uvarint.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { ByteReader, putUvarint } from "../base/bytes.js";

/** One operation of a version. */
export interface PackedOp {
  key: Uint8Array;
  /** A set; else a remove. */
  set: boolean;
  /**
   * For the last operation on its key in the version (when it changed the key: a set, or the removal of a key that
   * was there before the version), the place of the leaves row it made among the version's rows, which are in key
   * order: its id is the version's first leaf id plus this. Undefined for every other operation.
   */
  row: number | undefined;
}

/** The packed bytes of `ops`. */
export function packOps(ops: readonly PackedOp[]): Uint8Array {
  let n = 0;
  for (const op of ops) n += 1 + 5 + op.key.length + 8;
  const buf = new Uint8Array(n);
  let p = 0;
  for (const op of ops) {
    buf[p++] = (op.set ? 1 : 0) | (op.row !== undefined ? 2 : 0);
    p = putUvarint(buf, p, op.key.length);
    buf.set(op.key, p);
    p += op.key.length;
    if (op.row !== undefined) p = putUvarint(buf, p, op.row);
  }
  return buf.slice(0, p);
}

/** The operations packed in `bytes`; throws `CORRUPT` when they do not parse. */
export function unpackOps(bytes: Uint8Array, version: number): PackedOp[] {
  const ops: PackedOp[] = [];
  const bad = (): IavlError => new IavlError("CORRUPT", `the operations of version ${version} do not parse`);
  const r = new ByteReader(bytes, bad);
  while (!r.done) {
    const flags = r.byte();
    if (flags > 3) throw bad();
    const key = r.view(r.uvarint()).slice();
    ops.push({ key, set: (flags & 1) === 1, row: (flags & 2) === 2 ? r.uvarint() : undefined });
  }
  return ops;
}

/** How many leaves rows the operations made (their ids are the version's first leaf id and the ones after it). */
export function rowCount(ops: readonly PackedOp[]): number {
  let n = 0;
  for (const op of ops) if (op.row !== undefined) n++;
  return n;
}
