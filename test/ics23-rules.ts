/**
 * The checks that Go's cosmos/ics23 applies to a proof verified against `IavlSpec` (as ibc-go does), on top of what
 * the JS verifier in `@confio/ics23` 0.6.8 checks. Written from reading `go/ops.go` (`validateIavlOps`,
 * `LeafOp.CheckAgainstSpec`, `InnerOp.CheckAgainstSpec`, `LeafOp.Apply`) and `go/proof.go`
 * (`ExistenceProof.CheckAgainstSpec`, `NonExistenceProof.Verify`) at cosmos/ics23 HEAD (7f2c2d0).
 *
 * Each function throws an `Error` naming the broken rule, and returns normally when the proof is acceptable.
 */
import { ics23 } from "@confio/ics23";
import { decompress } from "@confio/ics23/build/compress.js";
import type { CommitmentProof } from "../src/index.js";

/** `IavlSpec` in Go leaves `MaxDepth` at 0, which `CheckAgainstSpec` replaces with this bound on the path length. */
export const GO_DEFAULT_MAX_DEPTH = 128;
/** `IavlSpec.InnerSpec`: MinPrefixLength 4, MaxPrefixLength 12, ChildSize 33, two children. */
const MIN_PREFIX = 4;
const MAX_PREFIX = 12;
const CHILD_SIZE = 33;
/** The longest inner prefix Go accepts: the max prefix plus one left sibling (`(len(ChildOrder) - 1) * ChildSize`). */
const MAX_INNER_PREFIX = MAX_PREFIX + CHILD_SIZE;

/** Longest varint Go's `binary.ReadUvarint` accepts (`MaxVarintLen64`). */
const MAX_VARINT_LEN = 10;

/**
 * Reads one signed zig-zag varint the way Go's `binary.ReadVarint` does over a `bytes.Reader`: no bytes left is an
 * error (EOF), a varint cut short is an error (unexpected EOF), more than 64 bits is an error (overflow).
 */
function readGoVarint(buf: Uint8Array, pos: number, what: string): { value: bigint; next: number } {
  let x = 0n;
  let shift = 0n;
  for (let i = 0; i < MAX_VARINT_LEN; i++) {
    if (pos + i >= buf.length) {
      throw new Error(i === 0 ? `${what}: no varint left in prefix (EOF)` : `${what}: varint cut short (unexpected EOF)`);
    }
    const byte = buf[pos + i]!;
    if (byte < 0x80) {
      if (i === MAX_VARINT_LEN - 1 && byte > 1) throw new Error(`${what}: varint overflows 64 bits`);
      const u = x | (BigInt(byte) << shift);
      // Zig-zag: the low bit carries the sign, the rest the magnitude (Go: x := int64(ux >> 1); if ux&1 != 0 { x = ^x }).
      const half = u >> 1n;
      const value = (u & 1n) === 0n ? half : -half - 1n;
      return { value, next: pos + i + 1 };
    }
    x |= BigInt(byte & 0x7f) << shift;
    shift += 7n;
  }
  throw new Error(`${what}: varint overflows 64 bits`);
}

function prefixOf(op: { prefix?: Uint8Array | null }): Uint8Array {
  return op.prefix ?? new Uint8Array(0);
}

/**
 * The IAVL header check of one op (`validateIavlOps`): `layer` 0 is the leaf, `layer` n ≥ 1 is the n-th inner op
 * counted from the leaf. The prefix must begin with three non-negative varints (height, size, version) with
 * height ≥ layer; a leaf must have height 0, size 1 and nothing after the three varints; an inner op must have exactly
 * 1 byte (child on the left: the length byte of the child hash) or 34 bytes (child on the right: length byte, left
 * hash, length byte) after them and hash with SHA-256.
 */
function checkIavlHeader(prefix: Uint8Array, hash: number, layer: number): void {
  const where = layer === 0 ? "leaf" : `inner op ${layer}`;
  const h = readGoVarint(prefix, 0, `${where} height`);
  if (h.value < 0n || h.value < BigInt(layer)) {
    throw new Error(`${where}: IAVL height ${h.value} must be non-negative and at least the layer number ${layer}`);
  }
  const s = readGoVarint(prefix, h.next, `${where} size`);
  if (s.value < 0n) throw new Error(`${where}: IAVL size ${s.value} must be non-negative`);
  const v = readGoVarint(prefix, s.next, `${where} version`);
  if (v.value < 0n) throw new Error(`${where}: IAVL version ${v.value} must be non-negative`);
  const rest = prefix.length - v.next;
  if (layer === 0) {
    if (rest !== 0) throw new Error(`leaf: ${rest} bytes follow the three varints of the prefix, expected none`);
    if (h.value !== 0n) throw new Error(`leaf: height must be 0, got ${h.value}`);
    if (s.value !== 1n) throw new Error(`leaf: size must be 1, got ${s.value}`);
  } else {
    if (rest !== 1 && rest !== 34) throw new Error(`${where}: ${rest} bytes follow the three varints of the prefix, expected 1 or 34`);
    if (hash !== ics23.HashOp.SHA256) throw new Error(`${where}: hash op must be SHA256, got ${hash}`);
  }
}

/**
 * Throws unless `proof` passes every check Go's `ExistenceProof.CheckAgainstSpec(IavlSpec)` makes, plus the
 * non-empty key and value that Go's `LeafOp.Apply` demands.
 */
export function checkIavlOps(proof: ics23.IExistenceProof): void {
  const key = proof.key ?? new Uint8Array(0);
  const value = proof.value ?? new Uint8Array(0);
  if (key.length === 0) throw new Error("existence proof: leaf op needs a key");
  if (value.length === 0) throw new Error("existence proof: leaf op needs a value");

  const leaf = proof.leaf;
  if (leaf === null || leaf === undefined) throw new Error("existence proof needs a leaf op");
  const leafPrefix = prefixOf(leaf);
  checkIavlHeader(leafPrefix, leaf.hash ?? 0, 0);
  if ((leaf.hash ?? 0) !== ics23.HashOp.SHA256) throw new Error(`leaf: unexpected hash op ${leaf.hash}`);
  if ((leaf.prehashKey ?? 0) !== ics23.HashOp.NO_HASH) throw new Error(`leaf: unexpected prehash_key ${leaf.prehashKey}`);
  if ((leaf.prehashValue ?? 0) !== ics23.HashOp.SHA256) throw new Error(`leaf: unexpected prehash_value ${leaf.prehashValue}`);
  if ((leaf.length ?? 0) !== ics23.LengthOp.VAR_PROTO) throw new Error(`leaf: unexpected length op ${leaf.length}`);
  if (leafPrefix.length < 1 || leafPrefix[0] !== 0) throw new Error("leaf: prefix must start with 0x00");

  const path = proof.path ?? [];
  if (path.length > GO_DEFAULT_MAX_DEPTH) throw new Error(`path of ${path.length} inner ops exceeds ${GO_DEFAULT_MAX_DEPTH}`);

  path.forEach((op, i) => {
    const layer = i + 1;
    const where = `inner op ${layer}`;
    const hash = op.hash ?? 0;
    if (hash !== ics23.HashOp.SHA256) throw new Error(`${where}: unexpected hash op ${hash}`);
    const prefix = prefixOf(op);
    checkIavlHeader(prefix, hash, layer);
    if (prefix.length >= 1 && prefix[0] === 0) throw new Error(`${where}: prefix starts with the leaf prefix 0x00`);
    if (prefix.length < MIN_PREFIX) throw new Error(`${where}: prefix too short (${prefix.length})`);
    if (prefix.length > MAX_INNER_PREFIX) throw new Error(`${where}: prefix too long (${prefix.length})`);
    const suffix = op.suffix ?? new Uint8Array(0);
    if (suffix.length % CHILD_SIZE !== 0) throw new Error(`${where}: suffix length ${suffix.length} is not a multiple of ${CHILD_SIZE}`);
  });
}

function checkNonExist(n: ics23.INonExistenceProof): void {
  const left = n.left ?? undefined;
  const right = n.right ?? undefined;
  if (left === undefined && right === undefined) throw new Error("non-existence proof has neither a left nor a right proof");
  if (left !== undefined) checkIavlOps(left);
  if (right !== undefined) checkIavlOps(right);
}

/**
 * Applies {@link checkIavlOps} to every existence proof inside `p`: the proof itself, both neighbours of a
 * non-existence proof, and each entry of a batch (compressed batches are expanded first).
 */
export function checkProof(p: CommitmentProof): void {
  const norm = decompress(p);
  let found = false;
  if (norm.exist) {
    checkIavlOps(norm.exist);
    found = true;
  }
  if (norm.nonexist) {
    checkNonExist(norm.nonexist);
    found = true;
  }
  if (norm.batch) {
    const entries = norm.batch.entries ?? [];
    if (entries.length === 0) throw new Error("batch proof has no entries");
    for (const e of entries) {
      if (e.exist) checkIavlOps(e.exist);
      else if (e.nonexist) checkNonExist(e.nonexist);
      else throw new Error("batch entry holds neither an existence nor a non-existence proof");
    }
    found = true;
  }
  if (!found) throw new Error("commitment proof holds no proof");
}

/** `TendermintSpec.InnerSpec`: prefix exactly 1 byte before the left sibling, 32-byte children, two of them. */
const TM_CHILD_SIZE = 32;
const TM_MAX_INNER_PREFIX = 1 + TM_CHILD_SIZE;

/**
 * Throws unless `proof` passes every check Go's `ExistenceProof.CheckAgainstSpec(TendermintSpec)` makes beyond the JS
 * verifier's: at most 128 inner ops; per inner op `validateTendermintOps` (a prefix beginning with 0x01, and exactly
 * 0x01 when the suffix field is present at all, which a protobufjs-decoded op shows as an own `suffix` property),
 * no prefix beginning with the leaf prefix 0x00 (JS misses a prefix equal to it), a suffix of whole 32-byte children.
 */
export function checkTendermintOps(proof: ics23.IExistenceProof): void {
  const path = proof.path ?? [];
  if (path.length > GO_DEFAULT_MAX_DEPTH) throw new Error(`path of ${path.length} inner ops exceeds ${GO_DEFAULT_MAX_DEPTH}`);
  path.forEach((op, i) => {
    const where = `inner op ${i + 1}`;
    const prefix = prefixOf(op);
    if (prefix.length === 0) throw new Error(`${where}: empty prefix`);
    if (Object.prototype.hasOwnProperty.call(op, "suffix") && op.suffix != null && !(prefix.length === 1 && prefix[0] === 1)) {
      throw new Error(`${where}: a suffix is present, so the prefix must be exactly 0x01`);
    }
    if (prefix[0] !== 1) throw new Error(`${where}: prefix must begin with 0x01`);
    if (prefix.length > TM_MAX_INNER_PREFIX) throw new Error(`${where}: prefix too long (${prefix.length})`);
    const suffix = op.suffix ?? new Uint8Array(0);
    if (suffix.length % TM_CHILD_SIZE !== 0) throw new Error(`${where}: suffix length ${suffix.length} is not a multiple of ${TM_CHILD_SIZE}`);
  });
}
