/**
 * ICS23 commitment proofs of IAVL leaves (SPEC §3), in the shape `@confio/ics23` verifies and Go's `validateIavlOps`
 * accepts.
 * @module
 */
import { ics23 } from "@confio/ics23";
import { IavlError } from "../base/errors.js";
import { concatBytes, latin1, latin1Bytes, putVarint, type ByteString } from "../base/bytes.js";
import { NONE, type NodeSource, type NodeTable } from "./node.js";
import { indexOf, leafAt, pathTo } from "./read.js";
import type { ValueOf } from "./store-contract.js";
import type { CommitmentProof } from "./readonly-tree.js";

function header(values: number[]): Uint8Array {
  const buf = new Uint8Array(10 * values.length);
  let p = 0;
  for (const v of values) p = putVarint(buf, p, v);
  return buf.subarray(0, p);
}

const LEN32 = new Uint8Array([32]);

const hex = (key: ByteString): string => Buffer.from(key, "latin1").toString("hex");

/**
 * The existence proof of `key`, or, with `absent`, of `key` as the neighbour of the absent key a non-existence proof
 * is asked of. ICS23 proves no leaf with an empty value (@confio/ics23's `applyLeaf` throws "Missing value", Go's
 * `LeafOp.Apply` "leaf op needs value"), so that neither the key nor an absent key beside it can be proven then:
 * `EMPTY_VALUE_PROOF`, naming the key asked of. (cosmos/iavl builds such a neighbour's proof all the same, and no
 * verifier accepts it.)
 */
function existence(root: number, key: ByteString, src: NodeSource, valueOf: ValueOf, absent?: ByteString): ics23.IExistenceProof {
  const t = src.t;
  const path = pathTo(root, key, src);
  if (path === undefined) throw new Error("iavlite: existence proof of an absent key");
  const leaf = path[path.length - 1]!;
  const value = valueOf(t, leaf);
  if (value.length === 0) {
    throw new IavlError(
      "EMPTY_VALUE_PROOF",
      absent === undefined
        ? `ICS23 cannot prove key ${hex(key)}: its value is empty`
        : `ICS23 cannot prove that key ${hex(absent)} is absent: the proof of an absent key is made of its neighbours' proofs, and its neighbour ${hex(key)} has an empty value, which ICS23 cannot prove`,
    );
  }
  const ops: ics23.IInnerOp[] = [];
  for (let i = path.length - 2; i >= 0; i--) {
    const n = path[i]!;
    const hdr = header([t.height(n), t.size(n), t.version(n)]);
    const l = src.left(n);
    const r = src.right(n);
    if (l === path[i + 1]) {
      ops.push({ hash: ics23.HashOp.SHA256, prefix: concatBytes(hdr, LEN32), suffix: concatBytes(LEN32, hashOf(t, r)) });
    } else {
      ops.push({ hash: ics23.HashOp.SHA256, prefix: concatBytes(hdr, LEN32, hashOf(t, l), LEN32), suffix: new Uint8Array(0) });
    }
  }
  return {
    key: latin1Bytes(key),
    // A copy: the proof is the caller's, and writing into it must not change the tree.
    value: value.slice(),
    leaf: leafOp(header([0, 1, t.version(leaf)])),
    path: ops,
  };
}

/** The leaf op of IAVL and of the app hash's tree alike: SHA-256 of the prefix, the key and the value's SHA-256, length-prefixed. */
export function leafOp(prefix: Uint8Array): ics23.ILeafOp {
  return { hash: ics23.HashOp.SHA256, prehashKey: ics23.HashOp.NO_HASH, prehashValue: ics23.HashOp.SHA256, length: ics23.LengthOp.VAR_PROTO, prefix };
}

function hashOf(t: NodeTable, n: number): Uint8Array {
  if (!t.hashed(n)) throw new Error("iavlite: proof over an unhashed node");
  return t.hashBytes(n);
}

/**
 * An existence proof when `key` is under `root`, otherwise a non-existence proof made of the existence proofs of its
 * neighbours (Go's `GetMembershipProof` / `GetNonMembershipProof`). `root` must be fully hashed (committed).
 */
export function createProof(root: number, key: Uint8Array, src: NodeSource, valueOf: ValueOf): CommitmentProof {
  if (root === NONE) throw new IavlError("EMPTY_TREE", "cannot prove anything against an empty tree");
  const k = latin1(key);
  const { index, leaf } = indexOf(root, k, src);
  if (leaf !== NONE) return { exist: existence(root, k, src, valueOf) };
  const nonexist: ics23.INonExistenceProof = { key };
  const left = index >= 1 ? leafAt(root, index - 1, src) : NONE;
  const right = leafAt(root, index, src);
  if (left !== NONE) nonexist.left = existence(root, src.t.key(left), src, valueOf, k);
  if (right !== NONE) nonexist.right = existence(root, src.t.key(right), src, valueOf, k);
  return { nonexist };
}
