/**
 * A generator of app-level proofs for tests: the ICS23 existence proof, under `tendermintSpec`, that a store has a
 * given root hash inside a Cosmos SDK app hash (the `CommitInfo` hash: an RFC 6962 tree over the stores sorted by
 * name). It is the second of the two proofs the SDK returns for a multistore query, built the way the SDK's
 * `store/internal/proofs` converts a CometBFT simple proof.
 *
 * The library has no app-level proof generator yet; the query-service work will move one into src/api. This one is
 * self-contained (its own hashing, its own RFC 6962 split) so that it checks src/api/commit-info.ts instead of
 * sharing its code.
 */
import { ics23 } from "@confio/ics23";
import { sha256 } from "@noble/hashes/sha2.js";

const enc = new TextEncoder();

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function protoVarint(n: number): Uint8Array {
  const out: number[] = [];
  for (; n >= 0x80; n = Math.floor(n / 0x80)) out.push((n % 0x80) | 0x80);
  out.push(n);
  return Uint8Array.from(out);
}

function compare(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

/** RFC 6962 leaf hash of one store: `sha256(0x00 ‖ uvarint(len name) ‖ name ‖ uvarint(32) ‖ sha256(store hash))`. */
function leafHash(name: Uint8Array, storeHash: Uint8Array): Uint8Array {
  const vh = sha256(storeHash);
  return sha256(concat(Uint8Array.of(0), protoVarint(name.length), name, protoVarint(vh.length), vh));
}

/** RFC 6962 root of leaf hashes (n ≥ 1): split at the largest power of two below n, inner = sha256(0x01 ‖ l ‖ r). */
function root(leaves: Uint8Array[]): Uint8Array {
  if (leaves.length === 1) return leaves[0]!;
  const k = split(leaves.length);
  return sha256(concat(Uint8Array.of(1), root(leaves.slice(0, k)), root(leaves.slice(k))));
}

function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** The steps from leaf `i` to the root, leaf first. A left child's step has no suffix field at all (Go's nil). */
function path(leaves: Uint8Array[], i: number): ics23.IInnerOp[] {
  if (leaves.length === 1) return [];
  const k = split(leaves.length);
  const left = leaves.slice(0, k);
  const right = leaves.slice(k);
  if (i < k) return [...path(left, i), { hash: ics23.HashOp.SHA256, prefix: Uint8Array.of(1), suffix: root(right) }];
  return [...path(right, i - k), { hash: ics23.HashOp.SHA256, prefix: concat(Uint8Array.of(1), root(left)) }];
}

/** The app hash of `stores` (name → store root hash) and the proof of each store in it. */
export interface AppProofs {
  appHash: Uint8Array;
  proofs: Map<string, ics23.ICommitmentProof>;
}

/** Builds the app hash and every store's app-level proof (`stores` must not be empty). */
export function appProofs(stores: ReadonlyMap<string, Uint8Array>): AppProofs {
  const entries = [...stores].map(([name, hash]) => ({ name, key: enc.encode(name), hash }));
  entries.sort((a, b) => compare(a.key, b.key));
  const leaves = entries.map((e) => leafHash(e.key, e.hash));
  const proofs = new Map<string, ics23.ICommitmentProof>();
  entries.forEach((e, i) => {
    proofs.set(e.name, {
      exist: {
        key: e.key,
        value: e.hash,
        leaf: {
          hash: ics23.HashOp.SHA256,
          prehashKey: ics23.HashOp.NO_HASH,
          prehashValue: ics23.HashOp.SHA256,
          length: ics23.LengthOp.VAR_PROTO,
          prefix: Uint8Array.of(0),
        },
        path: path(leaves, i),
      },
    });
  });
  return { appHash: root(leaves), proofs };
}
