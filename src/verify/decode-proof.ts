/**
 * Decodes the protobuf bytes of an ICS23 `CommitmentProof` (as `ics23.CommitmentProof.encode(p).finish()` or Go's
 * `proto.Marshal` write them) into {@link CommitmentProof}, or refuses them.
 *
 * Stricter than protobufjs and Go in three ways that well-formed proofs never meet, and where the two disagree with
 * each other: a singular field written twice is refused (protobufjs keeps the last message, Go merges them); a
 * `CommitmentProof` with more than one member of its `oneof` is refused (protobufjs keeps all, Go the last); a field
 * of a known number with the wrong wire type is refused (protobufjs reads it anyway). Enum values must be plain
 * non-negative 32-bit numbers. Unknown fields are skipped, as protobuf requires.
 *
 * Batch and compressed batch proofs are refused: Go's cosmos/ics23 dropped them, so a chain's verifier would not
 * accept them either.
 * @module
 */
import { Malformed, ProtoReader, Wire } from "./protobuf.js";
import type { CommitmentProof, ExistenceProof, InnerOp, LeafOp, NonExistenceProof } from "./proof-types.js";
import { DEFAULT_MAX_DEPTH } from "./specs.js";

const EMPTY = new Uint8Array(0);
/** Largest enum number accepted: `HashOp` and `LengthOp` values are small; anything past int32 is malformed. */
const MAX_ENUM = 0x7fffffff;

/** Remembers which singular fields of one message were read, to refuse a second copy. */
class Seen {
  private fields = new Set<number>();
  once(field: number): void {
    if (this.fields.has(field)) throw new Malformed(`field ${field} twice`);
    this.fields.add(field);
  }
}

function expectWire(wire: number, expected: number): void {
  if (wire !== expected) throw new Malformed(`wire type ${wire}, expected ${expected}`);
}

function enumValue(r: ProtoReader, wire: number): number {
  expectWire(wire, Wire.VARINT);
  const v = r.varint();
  if (v > MAX_ENUM) throw new Malformed("enum value beyond int32");
  return v;
}

function bytesValue(r: ProtoReader, wire: number): Uint8Array {
  expectWire(wire, Wire.LEN);
  return r.bytes();
}

function leafOp(buf: Uint8Array): LeafOp {
  const op: LeafOp = { hash: 0, prehashKey: 0, prehashValue: 0, length: 0, prefix: EMPTY };
  const r = new ProtoReader(buf);
  const seen = new Seen();
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field >= 1 && field <= 5) seen.once(field);
    if (field === 1) op.hash = enumValue(r, wire);
    else if (field === 2) op.prehashKey = enumValue(r, wire);
    else if (field === 3) op.prehashValue = enumValue(r, wire);
    else if (field === 4) op.length = enumValue(r, wire);
    else if (field === 5) op.prefix = bytesValue(r, wire);
    else r.skip(wire);
  }
  return op;
}

function innerOp(buf: Uint8Array): InnerOp {
  const op: InnerOp = { hash: 0, prefix: EMPTY, suffix: EMPTY, hasSuffix: false };
  const r = new ProtoReader(buf);
  const seen = new Seen();
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field >= 1 && field <= 3) seen.once(field);
    if (field === 1) op.hash = enumValue(r, wire);
    else if (field === 2) op.prefix = bytesValue(r, wire);
    else if (field === 3) {
      op.suffix = bytesValue(r, wire);
      op.hasSuffix = true;
    } else r.skip(wire);
  }
  return op;
}

function existenceProof(buf: Uint8Array): ExistenceProof {
  const p: ExistenceProof = { key: EMPTY, value: EMPTY, leaf: undefined, path: [] };
  const r = new ProtoReader(buf);
  const seen = new Seen();
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field >= 1 && field <= 3) seen.once(field);
    if (field === 1) p.key = bytesValue(r, wire);
    else if (field === 2) p.value = bytesValue(r, wire);
    else if (field === 3) p.leaf = leafOp(bytesValue(r, wire));
    else if (field === 4) {
      // No spec verified here allows a longer path; stopping now bounds the work a huge proof can cause.
      if (p.path.length === DEFAULT_MAX_DEPTH) throw new Malformed("path longer than any spec allows");
      p.path.push(innerOp(bytesValue(r, wire)));
    } else r.skip(wire);
  }
  return p;
}

function nonExistenceProof(buf: Uint8Array): NonExistenceProof {
  const p: NonExistenceProof = { key: EMPTY, left: undefined, right: undefined };
  const r = new ProtoReader(buf);
  const seen = new Seen();
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field >= 1 && field <= 3) seen.once(field);
    if (field === 1) p.key = bytesValue(r, wire);
    else if (field === 2) p.left = existenceProof(bytesValue(r, wire));
    else if (field === 3) p.right = existenceProof(bytesValue(r, wire));
    else r.skip(wire);
  }
  return p;
}

/** Field numbers of the `oneof proof` of `CommitmentProof`. */
const EXIST = 1;
const NONEXIST = 2;
const BATCH = 3;
const COMPRESSED = 4;

/**
 * The proof in `bytes`, or undefined when they are not a well-formed `CommitmentProof` holding exactly one existence
 * or non-existence proof (see the module notes for what is refused).
 */
export function decodeCommitmentProof(bytes: Uint8Array): CommitmentProof | undefined {
  try {
    const r = new ProtoReader(bytes);
    let proof: CommitmentProof | undefined;
    let members = 0;
    while (!r.done) {
      const { field, wire } = r.tag();
      if (field < EXIST || field > COMPRESSED) {
        r.skip(wire);
        continue;
      }
      if (++members > 1) return undefined;
      const body = bytesValue(r, wire);
      if (field === EXIST) proof = { exist: existenceProof(body) };
      else if (field === NONEXIST) proof = { nonexist: nonExistenceProof(body) };
      else if (field === BATCH || field === COMPRESSED) return undefined;
    }
    return proof;
  } catch (e) {
    if (e instanceof Malformed) return undefined;
    throw e;
  }
}
