/**
 * The unit of the state-sync export stream (SPEC §4), as cosmos/iavl `ExportNode`.
 * @module
 */

/**
 * One node of an exported tree, in the depth-first post-order (left, right, self) of cosmos/iavl's `Exporter`.
 *
 * Leaves have `height` 0 and carry `value` (possibly empty); inner nodes carry only `key` (the smallest key of their
 * right subtree), `version` and `height`, and `value` is absent. Size and hashes are not part of the stream: an
 * importer recomputes them, so a peer cannot lie about them.
 *
 * The byte arrays may be shared with the tree or the decoder that produced them; do not change them.
 */
export interface ExportNode {
  /** Leaf key, or for an inner node the smallest key of its right subtree. Never empty in a valid stream. */
  key: Uint8Array;
  /** The leaf's value; present exactly for leaves (height 0). */
  value?: Uint8Array;
  /** The version at which the node was (re)created; 1 ≤ version ≤ the exported version. */
  version: number;
  /** 0 for leaves; for inner nodes 1 + the larger height of the two children. */
  height: number;
}
