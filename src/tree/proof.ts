/**
 * ICS23 commitment proofs of IAVL leaves (SPEC §3), in the shape `@confio/ics23` verifies and Go's `validateIavlOps`
 * accepts.
 * @module
 */
import { ics23 } from "@confio/ics23";
import { IavlError } from "../base/errors.js";
import { concatBytes, latin1, latin1Bytes, putVarint, type ByteString } from "../base/bytes.js";
import { digestBytes } from "../base/hash.js";
import type { Node, NodeSource } from "./node.js";
import { indexOf, leafAt, pathTo } from "./read.js";

/** A commitment proof as `@confio/ics23` types it. */
export type CommitmentProof = ics23.ICommitmentProof;

function header(values: number[]): Uint8Array {
  const buf = new Uint8Array(10 * values.length);
  let p = 0;
  for (const v of values) p = putVarint(buf, p, v);
  return buf.subarray(0, p);
}


const LEN32 = new Uint8Array([32]);

/** Reads the value of a committed leaf (a store may keep values apart from nodes). */
export type ValueOf = (leaf: Node) => Uint8Array;

function existence(root: Node, key: ByteString, src: NodeSource, valueOf: ValueOf): ics23.IExistenceProof {
  const path = pathTo(root, key, src);
  if (path === undefined) throw new Error("iavlite: existence proof of an absent key");
  const leaf = path[path.length - 1]!;
  const value = valueOf(leaf);
  if (value.length === 0) {
    throw new IavlError("EMPTY_VALUE_PROOF", `ICS23 cannot prove key ${Buffer.from(key, "latin1").toString("hex")}: its value is empty`);
  }
  const ops: ics23.IInnerOp[] = [];
  for (let i = path.length - 2; i >= 0; i--) {
    const n = path[i]!;
    const hdr = header([n.height, n.size, n.version]);
    const l = src.left(n);
    const r = src.right(n);
    if (l === path[i + 1]) {
      ops.push({ hash: ics23.HashOp.SHA256, prefix: concatBytes(hdr, LEN32), suffix: concatBytes(LEN32, hashOf(r)) });
    } else {
      ops.push({ hash: ics23.HashOp.SHA256, prefix: concatBytes(hdr, LEN32, hashOf(l), LEN32), suffix: new Uint8Array(0) });
    }
  }
  return {
    key: latin1Bytes(key),
    value,
    leaf: {
      hash: ics23.HashOp.SHA256,
      prehashKey: ics23.HashOp.NO_HASH,
      prehashValue: ics23.HashOp.SHA256,
      length: ics23.LengthOp.VAR_PROTO,
      prefix: header([0, 1, leaf.version]),
    },
    path: ops,
  };
}

function hashOf(n: Node): Uint8Array {
  if (n.hash === undefined) throw new Error("iavlite: proof over an unhashed node");
  return digestBytes(n.hash);
}

/**
 * An existence proof when `key` is under `root`, otherwise a non-existence proof made of the existence proofs of its
 * neighbours (Go's `GetMembershipProof` / `GetNonMembershipProof`). `root` must be fully hashed (committed).
 */
export function createProof(root: Node | undefined, key: Uint8Array, src: NodeSource, valueOf: ValueOf): CommitmentProof {
  if (root === undefined) throw new IavlError("EMPTY_TREE", "cannot prove anything against an empty tree");
  const k = latin1(key);
  const { index, leaf } = indexOf(root, k, src);
  if (leaf !== undefined) return { exist: existence(root, k, src, valueOf) };
  const nonexist: ics23.INonExistenceProof = { key };
  const left = index >= 1 ? leafAt(root, index - 1, src) : undefined;
  const right = leafAt(root, index, src);
  if (left !== undefined) nonexist.left = existence(root, left.key, src, valueOf);
  if (right !== undefined) nonexist.right = existence(root, right.key, src, valueOf);
  return { nonexist };
}
