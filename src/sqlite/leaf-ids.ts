/**
 * The ids of a version's leaves rows. A version's rows were once one run of ids (`first_leaf` and `leaf_rows`); since
 * migration 008 a commit takes the ids pruning freed first (the `free_leaves` table, filled by a trigger on every
 * deleted row), so that a new row fills the hole an old one left instead of growing the file. A version whose ids
 * are not one run lists them in `leaf_ids`: ascending (so in the key order of its rows), packed as the first id and
 * then the gaps between neighbours, each a uvarint.
 * @module
 */
import { ByteReader, putUvarint } from "../base/bytes.js";
import { IavlError } from "../base/errors.js";

/** `ids` (ascending) packed for a `leaf_ids` column, or null when they are one run from the first (the column stays NULL). */
export function packLeafIds(ids: readonly number[]): Uint8Array | null {
  if (ids.length === 0 || ids[ids.length - 1]! - ids[0]! === ids.length - 1) return null;
  const buf = new Uint8Array(ids.length * 8);
  let p = putUvarint(buf, 0, ids[0]!);
  for (let i = 1; i < ids.length; i++) p = putUvarint(buf, p, ids[i]! - ids[i - 1]!);
  return buf.slice(0, p);
}

/**
 * The ids of a version's `count` rows: those `packed` lists, else the run from `first`. Throws `CORRUPT` when the
 * list does not parse, holds another count, or does not ascend.
 */
export function leafIds(first: number, count: number, packed: Uint8Array | null, version: number): number[] {
  if (packed === null) return Array.from({ length: count }, (_, i) => first + i);
  const bad = (): IavlError => new IavlError("CORRUPT", `the leaves row ids of version ${version} do not parse`);
  const r = new ByteReader(packed, bad);
  const ids: number[] = [];
  for (let id = 0; !r.done; ) {
    const step = r.uvarint();
    if (ids.length > 0 && step === 0) throw bad();
    ids.push((id += step));
  }
  if (ids.length !== count) throw bad();
  return ids;
}
