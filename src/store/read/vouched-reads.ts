/**
 * Reads of values through the (key, version) index that the version's tree vouches for: the index is fast, but a
 * damaged entry could lose a key, add one or return an older row, all self-consistent. So a key the index misses is
 * absent only when the tree agrees, and an iteration walks the tree's leaves beside the index's rows, pair by pair.
 * (A row's own bytes are checked against its leaf hash where it is read, in sqlite/leaf-reader.ts.)
 * @module
 */
import { latin1, toHex } from "../../base/bytes.js";
import { fromSqlite, IavlError } from "../../base/errors.js";
import { checkIterateOptions } from "../../base/validate.js";
import { iterateLeaves } from "../../tree/iterate.js";
import { pinnedWalk } from "../../tree/node-table.js";
import { NONE, type NodeSource } from "../../tree/node.js";
import { findLeaf } from "../../tree/read.js";
import type { IterateOptions } from "../../tree/readonly-tree.js";
import type { StoreReader } from "../../sqlite/store-reader.js";
import type { VersionTree } from "./rebuild.js";
import type { VersionRead } from "./version-read.js";

/** The error of a key the tree of `version` holds but the (key, version) index of `file` does not find. */
function missingFromIndex(file: string, key: Uint8Array, version: number): IavlError {
  return new IavlError(
    "CORRUPT",
    `${file}: key ${toHex(key)} is in the tree of version ${version}, but the index of values does not find it; the file is damaged (iavlite verify finds what else is)`,
  );
}

/** Throws `CORRUPT` when the tree under `root` holds `key`, which the index of `file` did not find at `version`. */
export function confirmAbsent(file: string, key: Uint8Array, version: number, root: number, src: NodeSource): void {
  if (findLeaf(root, latin1(key), src) !== NONE) throw missingFromIndex(file, key, version);
}

/** The latest value of `key` as the writer's store holds it (undefined: absent, as the tree `live` agrees). */
export function latestValue(store: StoreReader, key: Uint8Array, live: { version: number; root: number }, src: NodeSource): Uint8Array | undefined {
  let value: Uint8Array | null | undefined;
  try {
    value = store.leaves.valueAt(key, Number.MAX_SAFE_INTEGER);
  } catch (e) {
    throw fromSqlite(e, `${store.db.name}: reading the latest value of a key`);
  }
  if (value !== undefined && value !== null) return value;
  confirmAbsent(store.db.name, key, live.version, live.root, src);
  return undefined;
}

/** The pairs of version `v` in the range of `opts` (checked), each vouched for by the tree `tree` builds. */
export function checkedPairs(v: VersionRead, opts: IterateOptions, tree: () => VersionTree): IterableIterator<[Uint8Array, Uint8Array]> {
  checkIterateOptions(opts);
  const t = v.run(tree);
  return pinnedWalk(t.src.t, () => indexPairs(v, opts, t));
}

/**
 * The pairs of version `v` in the range of `opts`, from the index of values; with `tree`, each checked against the
 * leaf the tree has at that place (the same key, and the row of the leaf's version), so that a damaged index entry
 * cannot drop, add or age a pair unseen. Without it (an audit, which compares the two itself) the rows as stored.
 */
export function* indexPairs(v: VersionRead, opts: IterateOptions, tree: VersionTree | undefined): Generator<[Uint8Array, Uint8Array]> {
  const { version } = v.row;
  const differs = (what: string): IavlError =>
    new IavlError("CORRUPT", `${v.store.db.name}: the index of values of version ${version} differs from its tree: ${what}; the file is damaged (iavlite verify finds what else is)`);
  const leaves = tree === undefined ? undefined : iterateLeaves(tree.root, opts, tree.src, () => undefined);
  const nextLeaf = (): number | undefined => {
    try {
      const r = leaves!.next();
      return r.done === true ? undefined : r.value;
    } catch (e) {
      // A node the walk needed is gone: pruned under it (the read says so), or damage.
      return v.run(() => {
        throw e;
      });
    }
  };
  const keyOf = (leaf: number): string => toHex(tree!.src.t.keyBytes(leaf));
  for (const [key, value, rowVersion] of v.store.leaves.range(version, opts.start, opts.end, opts.reverse === true, v.run, tree !== undefined)) {
    v.alive();
    if (tree !== undefined) {
      const leaf = nextLeaf();
      if (leaf === undefined) throw differs(`no more leaves where the index has key ${toHex(key)}`);
      if (tree.src.t.compareKey(latin1(key), leaf) !== 0 || tree.src.t.version(leaf) !== rowVersion) {
        throw differs(`leaf ${keyOf(leaf)} of version ${tree.src.t.version(leaf)} where the index has key ${toHex(key)} of version ${rowVersion}`);
      }
    }
    yield [key, value];
  }
  if (tree !== undefined) {
    const leaf = nextLeaf();
    if (leaf !== undefined) throw differs(`leaf ${keyOf(leaf)} past the index's last key`);
  }
}
