/**
 * Whether an existence proof has the shape its spec demands, before any hashing: ICS23's checks as both reference
 * verifiers make them (leaf ops equal the spec's, leaf prefix, inner hash, inner prefix lengths, depth), the ones only
 * Go makes (an inner prefix may not even equal the leaf prefix, suffixes are whole children, at most 128 steps) and
 * the family rules of `go-rules.ts`.
 * @module
 */
import { equalBytes, startsWith } from "./bytes.js";
import { iavlHeaderFits, tendermintInnerFits } from "./go-rules.js";
import type { ExistenceProof, InnerOp, LeafOp } from "./proof-types.js";
import type { ProofSpec } from "./specs.js";

function leafFits(leaf: LeafOp, spec: ProofSpec): boolean {
  const s = spec.leaf;
  if (leaf.hash !== s.hash || leaf.prehashKey !== s.prehashKey || leaf.prehashValue !== s.prehashValue) return false;
  if (leaf.length !== s.length || !startsWith(leaf.prefix, s.prefix)) return false;
  if (spec.family === "iavl") return iavlHeaderFits(leaf.prefix, 0);
  return equalBytes(leaf.prefix, s.prefix);
}

function innerFits(op: InnerOp, spec: ProofSpec, layer: number): boolean {
  const s = spec.inner;
  if (op.hash !== s.hash) return false;
  // Go's bytes.HasPrefix; @confio/ics23 misses an inner prefix that equals the leaf prefix outright.
  if (startsWith(op.prefix, spec.leaf.prefix)) return false;
  if (op.prefix.length < s.minPrefixLength) return false;
  // Room for the fixed prefix and every sibling that can sit before the child.
  if (op.prefix.length > s.maxPrefixLength + (s.childOrder.length - 1) * s.childSize) return false;
  if (op.suffix.length % s.childSize !== 0) return false;
  return spec.family === "iavl" ? iavlHeaderFits(op.prefix, layer) : tendermintInnerFits(op);
}

/** True when `proof`'s leaf op and every inner op (layer 1 nearest the leaf) fit `spec`. */
export function fitsSpec(proof: ExistenceProof, spec: ProofSpec): boolean {
  if (proof.leaf === undefined || !leafFits(proof.leaf, spec)) return false;
  const depth = proof.path.length;
  if (depth < spec.minDepth || depth > spec.maxDepth) return false;
  return proof.path.every((op, i) => innerFits(op, spec, i + 1));
}
