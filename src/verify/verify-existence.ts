/**
 * Existence: a proof fits its spec, names the key and value asked about, and hashes from them up to the root.
 * @module
 */
import { equalBytes } from "./bytes.js";
import { fitsSpec } from "./check-spec.js";
import { applyInner, applyLeaf } from "./ops.js";
import type { ExistenceProof } from "./proof-types.js";
import type { ProofSpec } from "./specs.js";

/** The root `proof` hashes to, or undefined when an op cannot be applied. Checks nothing against a spec. */
export function existenceRoot(proof: ExistenceProof): Uint8Array | undefined {
  if (proof.leaf === undefined) return undefined;
  let h = applyLeaf(proof.leaf, proof.key, proof.value);
  for (const op of proof.path) {
    if (h === undefined) return undefined;
    h = applyInner(op, h);
  }
  return h;
}

/** True when `proof` fits `spec` and proves that `key` holds `value` under `root`. */
export function verifyExistence(
  proof: ExistenceProof,
  spec: ProofSpec,
  root: Uint8Array,
  key: Uint8Array,
  value: Uint8Array,
): boolean {
  if (!equalBytes(proof.key, key) || !equalBytes(proof.value, value)) return false;
  if (!fitsSpec(proof, spec)) return false;
  const computed = existenceRoot(proof);
  return computed !== undefined && equalBytes(computed, root);
}
