/**
 * Non-existence: the proof's neighbours exist under the root, sit on either side of the key, and are adjacent leaves
 * (or the one present is the first or last leaf of the tree).
 * @module
 */
import { isBefore } from "./bytes.js";
import { isLeftMost, isLeftNeighbour, isRightMost } from "./neighbours.js";
import type { ExistenceProof, NonExistenceProof } from "./proof-types.js";
import type { ProofSpec } from "./specs.js";
import { verifyExistence } from "./verify-existence.js";

/**
 * True when `proof` fits `spec` and proves that `key` is not under `root`. The proof's own `key` field is not read
 * (neither reference verifier reads it): what is proven is the gap between the neighbours.
 */
export function verifyNonExistence(
  proof: NonExistenceProof,
  spec: ProofSpec,
  root: Uint8Array,
  key: Uint8Array,
): boolean {
  const { left, right } = proof;
  if (left === undefined && right === undefined) return false;
  // Each neighbour exists (proven against its own key and value) and lies on its side of the key.
  const exists = (e: ExistenceProof): boolean => verifyExistence(e, spec, root, e.key, e.value);
  if (left !== undefined && !(isBefore(left.key, key) && exists(left))) return false;
  if (right !== undefined && !(isBefore(key, right.key) && exists(right))) return false;
  if (left === undefined) return isLeftMost(spec.inner, right!.path);
  if (right === undefined) return isRightMost(spec.inner, left.path);
  return isLeftNeighbour(spec.inner, left.path, right.path);
}
