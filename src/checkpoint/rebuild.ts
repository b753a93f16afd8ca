/**
 * Rebuilding the tree of a stored version: the replay base's tree, loaded lazily, then the log of every version
 * after it, checked against the version's recorded root hash.
 * @module
 */
import { IavlError } from "../errors.js";
import { equalBytes, toHex } from "../tree/encoding.js";
import { EMPTY_HASH } from "../tree/hash.js";
import { Mutator } from "../tree/mutate.js";
import { hashNode, type Node } from "../tree/node.js";
import type { StoreReader, VersionRow } from "../sqlite/store.js";
import type { StoreSource } from "./node-source.js";
import { replayVersion } from "./replay.js";

/** The tree of `row`'s version; throws `CORRUPT` when the replay does not reach the recorded hash. */
export function rebuildVersion(store: StoreReader, src: StoreSource, row: VersionRow): Node | undefined {
  if (row.checkpoint) return src.root(row);
  const base = store.replayBase(row.version);
  let root = base === undefined ? undefined : src.root(base);
  const from = base === undefined ? store.firstVersion() : base.version + 1;
  const m = new Mutator(from, src);
  for (let v = from; v <= row.version; v++) root = replayVersion(m, root, v, store.log(v));
  const h = root === undefined ? EMPTY_HASH : hashNode(root, src);
  if (!equalBytes(h, row.hash)) {
    throw new IavlError("CORRUPT", `replaying to version ${row.version} gives root ${toHex(h)}, but the store recorded ${toHex(row.hash)}`);
  }
  return root;
}
