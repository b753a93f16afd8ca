/**
 * The app-level proof of a multi-store: an ICS23 existence proof that store `name` has root hash `h` under the app
 * hash, as the Cosmos SDK makes it for `ics23:simple` proof ops (store/rootmulti/proof.go, store/internal/proofs
 * convert.go): the RFC 6962 tree of commit-info.ts, its leaf as an ICS23 LeafOp (SHA256, key not prehashed, value
 * prehashed with SHA256, VAR_PROTO lengths, prefix 0x00) and each level above it as an InnerOp (prefix 0x01 ‖ the
 * left sibling and no suffix, or prefix 0x01 and the right sibling as suffix). `@confio/ics23` verifies it with
 * `tendermintSpec`, and so do Go's cosmos/ics23 and iavlite/verify, which add `validateTendermintOps`.
 * @module
 */
import { ics23 } from "@confio/ics23";
import { concatBytes, utf8 } from "../base/bytes.js";
import { IavlError } from "../base/errors.js";
import { merkleRoot, storeLeaf } from "./commit-info.js";
import { type CommitmentProof } from "../tree/readonly-tree.js";
import { leafOp } from "../tree/proof.js";

const INNER = new Uint8Array([1]);

/** The path from item `i` of `items` up to their RFC 6962 root, leaf first; split as `merkleRoot` splits. */
function innerOps(items: Uint8Array[], i: number): ics23.IInnerOp[] {
  if (items.length <= 1) return [];
  let k = 1;
  while (k * 2 < items.length) k *= 2;
  if (i < k) {
    const right = merkleRoot(items.slice(k));
    return [...innerOps(items.slice(0, k), i), { hash: ics23.HashOp.SHA256, prefix: INNER, suffix: right }];
  }
  const left = merkleRoot(items.slice(0, k));
  // No suffix field at all, as the SDK leaves it nil: an empty one is still written, Go decodes it as a non-nil
  // slice, and its validateTendermintOps then refuses any prefix but 0x01.
  return [...innerOps(items.slice(k), i - k), { hash: ics23.HashOp.SHA256, prefix: concatBytes(INNER, left) }];
}

/**
 * The ICS23 existence proof of store `name` (key: its UTF-8 bytes, value: its root hash) against the app hash of
 * `stores` (name → root hash, as `commitInfoHash` takes them). Throws `INVALID_ARGUMENT` when `name` is not among them.
 */
export function appProof(stores: ReadonlyMap<string, Uint8Array>, name: string): CommitmentProof {
  // The SDK's order: names sorted by their bytes.
  const names = [...stores.keys()].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const i = names.indexOf(name);
  if (i < 0) throw new IavlError("INVALID_ARGUMENT", `no store named ${name} (stores: ${names.join(", ")})`);
  const leaves = names.map((n) => storeLeaf(n, stores.get(n)!));
  return {
    exist: {
      key: utf8(name),
      value: stores.get(name)!.slice(),
      leaf: leafOp(new Uint8Array([0])),
      path: innerOps(leaves, i),
    },
  };
}
