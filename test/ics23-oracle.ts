/**
 * The reference that `iavlite/verify` is held to: a proof counts as valid only when `@confio/ics23` accepts it AND it
 * passes the checks Go's cosmos/ics23 adds (`ics23-rules.ts`), read the way Go reads it (HEAD: no batch proofs).
 * Each function takes the proof as protobuf bytes, decodes them with protobufjs, and returns false where either
 * reference refuses or throws.
 */
import { ics23, iavlSpec, tendermintSpec, verifyMembership, verifyNonMembership } from "@confio/ics23";
import { checkIavlOps, checkTendermintOps } from "./ics23-rules.js";

/** The decoded proof, or undefined when protobufjs refuses the bytes or they hold no single exist/nonexist proof. */
function decode(bytes: Uint8Array): ics23.CommitmentProof | undefined {
  let p: ics23.CommitmentProof;
  try {
    p = ics23.CommitmentProof.decode(bytes);
  } catch {
    return undefined;
  }
  const members = [p.exist, p.nonexist, p.batch, p.compressed].filter((m) => m != null).length;
  // Go's cosmos/ics23 dropped batch and compressed proofs. More than one oneof member is read differently by Go
  // (the last wins) and protobufjs (all kept), so it means nothing certain.
  if (members !== 1 || p.batch != null || p.compressed != null) return undefined;
  return p;
}

function passes(check: () => void): boolean {
  try {
    check();
    return true;
  } catch {
    return false;
  }
}

function safe(f: () => boolean): boolean {
  try {
    return f();
  } catch {
    return false;
  }
}

/** `@confio/ics23` `verifyMembership` with `iavlSpec`, and Go's `validateIavlOps` on the proof. */
export function referenceMembership(bytes: Uint8Array, root: Uint8Array, key: Uint8Array, value: Uint8Array): boolean {
  const p = decode(bytes);
  if (p?.exist == null) return false;
  return safe(() => verifyMembership(p, iavlSpec, root, key, value)) && passes(() => checkIavlOps(p.exist!));
}

/** `@confio/ics23` `verifyNonMembership` with `iavlSpec`, and Go's `validateIavlOps` on each neighbour. */
export function referenceNonMembership(bytes: Uint8Array, root: Uint8Array, key: Uint8Array): boolean {
  const p = decode(bytes);
  const n = p?.nonexist;
  if (n == null) return false;
  if (!safe(() => verifyNonMembership(p!, iavlSpec, root, key))) return false;
  return passes(() => {
    if (n.left != null) checkIavlOps(n.left);
    if (n.right != null) checkIavlOps(n.right);
  });
}

/**
 * `@confio/ics23` `verifyMembership` with `tendermintSpec`, Go's TendermintSpec checks, and the one rule iavlite adds
 * on purpose (stricter than both): the leaf prefix is exactly 0x00, as RFC 6962 and the Cosmos SDK write it.
 */
export function referenceStoreInApp(bytes: Uint8Array, appHash: Uint8Array, name: Uint8Array, storeHash: Uint8Array): boolean {
  const p = decode(bytes);
  const e = p?.exist;
  if (e == null) return false;
  if (!safe(() => verifyMembership(p!, tendermintSpec, appHash, name, storeHash))) return false;
  const prefix = e.leaf?.prefix ?? new Uint8Array(0);
  return passes(() => checkTendermintOps(e)) && prefix.length === 1 && prefix[0] === 0;
}
