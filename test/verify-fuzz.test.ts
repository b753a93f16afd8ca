/**
 * Differential fuzzing of `iavlite/verify` against the reference (`ics23-oracle.ts`: `@confio/ics23` with Go's extra
 * checks). Seeded, so a failure reproduces; the counts of each section are printed.
 *
 * - Valid proofs: the store's proofs are accepted by both.
 * - Structured mutations (fields of the decoded proof changed, then re-encoded by protobufjs, so the bytes are
 *   canonical): the verifier and the reference agree exactly.
 * - Byte mutations and random bytes: the verifier never accepts what the reference refuses. (It may refuse more: it
 *   refuses protobuf that protobufjs and Go read differently, such as a field written twice.)
 *
 * The decoder and the verification functions are called directly as well as through the public functions, so a
 * throw inside them fails the test instead of being caught by the public functions' last-resort `catch`.
 */
import { ics23 } from "@confio/ics23";
import { applyInner, applyLeaf } from "@confio/ics23/build/ops.js";
import { calculateExistenceRoot } from "@confio/ics23/build/proofs.js";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { Tree, toHex, type CommitmentProof } from "../src/index.js";
import { compareBytes } from "../src/base/bytes.js";
import { decodeCommitmentProof } from "../src/verify/decode-proof.js";
import { verifyMembership, verifyNonMembership, verifyStoreInApp } from "../src/verify/index.js";
import { iavlSpec, tendermintSpec } from "../src/verify/specs.js";
import { verifyExistence } from "../src/verify/verify-existence.js";
import { verifyNonExistence } from "../src/verify/verify-nonexistence.js";
import { appProofs } from "./app-proof.js";
import { randomBytes, rng } from "./helpers.js";
import { referenceMembership, referenceNonMembership, referenceStoreInApp } from "./ics23-oracle.js";

const encode = (p: CommitmentProof): Uint8Array => ics23.CommitmentProof.encode(p).finish();
const enc = new TextEncoder();

/** The internals without the public functions' safety net: these must not throw on any input either. */
function bareMembership(bytes: Uint8Array, root: Uint8Array, key: Uint8Array, value: Uint8Array): boolean {
  const p = decodeCommitmentProof(bytes);
  return p?.exist !== undefined && verifyExistence(p.exist, iavlSpec, root, key, value);
}
function bareNonMembership(bytes: Uint8Array, root: Uint8Array, key: Uint8Array): boolean {
  const p = decodeCommitmentProof(bytes);
  return p?.nonexist !== undefined && verifyNonExistence(p.nonexist, iavlSpec, root, key);
}
function bareStoreInApp(bytes: Uint8Array, appHash: Uint8Array, name: Uint8Array, storeHash: Uint8Array): boolean {
  const p = decodeCommitmentProof(bytes);
  return p?.exist !== undefined && verifyExistence(p.exist, tendermintSpec, appHash, name, storeHash);
}

/** One proof of the corpus and what it proves. */
interface Sample {
  proof: Uint8Array;
  key: Uint8Array;
  /** Undefined for a non-membership proof. */
  value: Uint8Array | undefined;
}

/** Tallies of one section, printed at the end. */
class Tally {
  runs = 0;
  bothAccept = 0;
  bothRefuse = 0;
  /** Byte mutations only: the reference accepts, the verifier (deliberately stricter) refuses. */
  stricter = 0;
  constructor(readonly name: string) {}
  add(ours: boolean, ref: boolean): void {
    this.runs++;
    if (ours && ref) this.bothAccept++;
    else if (!ours && !ref) this.bothRefuse++;
    else if (ref) this.stricter++;
  }
  toString(): string {
    const counts = `${this.bothAccept} accepted by both, ${this.bothRefuse} refused by both`;
    return `${this.name}: ${this.runs} checks, ${counts}, ${this.stricter} refused only by iavlite/verify`;
  }
}
const tallies: Tally[] = [];
function tally(name: string): Tally {
  const t = new Tally(name);
  tallies.push(t);
  return t;
}

let storeRoot: Uint8Array;
let corpus: Sample[];
let existProofs: ics23.IExistenceProof[];

beforeAll(() => {
  const next = rng(2024);
  const tree = Tree.memory();
  const live = new Map<string, [Uint8Array, Uint8Array]>();
  for (let v = 0; v < 3; v++) {
    for (let i = 0; i < 120; i++) {
      const k = randomBytes(next, 1 + Math.floor(next() * 8));
      const val = randomBytes(next, 1 + Math.floor(next() * 20));
      tree.set(k, val);
      live.set(toHex(k), [k, val]);
    }
    for (const [h, [k]] of [...live].slice(0, 15)) {
      tree.remove(k);
      live.delete(h);
    }
    tree.commit();
  }
  storeRoot = tree.hash;
  const entries = [...live.values()].sort((a, c) => compareBytes(a[0], c[0]));
  corpus = [];
  for (let i = 0; i < entries.length; i += 4) {
    const [k, val] = entries[i]!;
    corpus.push({ proof: encode(tree.proof(k)), key: k, value: val });
  }
  const absent = [new Uint8Array([0]), new Uint8Array([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])];
  for (let i = 1; i < entries.length; i += 5) absent.push(Uint8Array.from([...entries[i]![0], 0]));
  for (const k of absent) if (!live.has(toHex(k))) corpus.push({ proof: encode(tree.proof(k)), key: k, value: undefined });
  existProofs = corpus.filter((s) => s.value !== undefined).map((s) => ics23.CommitmentProof.decode(s.proof).exist!);
});

/** Runs both verifiers on `bytes`: as a membership proof of `key` and `value`, or a non-membership proof of `key`. */
function both(bytes: Uint8Array, key: Uint8Array, value: Uint8Array | undefined, root: Uint8Array = storeRoot): [boolean, boolean] {
  if (value !== undefined) {
    const ours = verifyMembership(bytes, root, key, value);
    expect(bareMembership(bytes, root, key, value)).toBe(ours);
    return [ours, referenceMembership(bytes, root, key, value)];
  }
  const ours = verifyNonMembership(bytes, root, key);
  expect(bareNonMembership(bytes, root, key)).toBe(ours);
  return [ours, referenceNonMembership(bytes, root, key)];
}

/**
 * Where the verifier refuses what the reference accepts, the bytes must be protobuf that protobufjs reads laxly (a
 * known field with another wire type, a sub-message running past its parent's end, a field twice): bytes that are
 * not the encoding of what protobufjs made of them. Go's decoder refuses the first two as well.
 */
function expectNotCanonical(bytes: Uint8Array): void {
  expect(toHex(encode(ics23.CommitmentProof.decode(bytes)))).not.toBe(toHex(bytes));
}

// ---------------------------------------------------------------------------------------------------------------
// Structured mutations

/** One change to a proof, chosen by fast-check: which kind, and numbers it draws on. */
type Mutation = [kind: number, at: number, byte: number, enumValue: number];
/** Kinds 0 to 34 change an existence proof; 35 to 41 a non-existence proof's own fields (others go to a neighbour). */
const EXIST_KINDS = 35;

const enumValue = fc.integer({ min: -2, max: 10 });
const mutations = fc.array(fc.tuple(fc.nat(47), fc.nat(1 << 16), fc.nat(255), enumValue), { minLength: 1, maxLength: 3 });

const flipAt = (a: Bytes, at: number, byte: number): Uint8Array => {
  const c = Uint8Array.from(a ?? []);
  if (c.length > 0) c[at % c.length] = c[at % c.length]! ^ (byte | 1);
  return c;
};
type Bytes = Uint8Array | null | undefined;
const appended = (a: Bytes, byte: number, n = 1): Uint8Array => Uint8Array.from([...(a ?? []), ...new Array<number>(n).fill(byte)]);
const truncated = (a: Bytes, at: number): Uint8Array => Uint8Array.from(a ?? []).slice(0, at % ((a?.length ?? 0) + 1));

/** Go's zig-zag varint. */
function zigzag(n: number): number[] {
  let u = n >= 0 ? n * 2 : -n * 2 - 1;
  const out: number[] = [];
  for (; u >= 0x80; u = Math.floor(u / 0x80)) out.push((u % 0x80) | 0x80);
  out.push(u);
  return out;
}

/** The bytes after the three header varints of an IAVL prefix (or undefined when it has no such header). */
function afterHeader(prefix: Uint8Array): Uint8Array | undefined {
  let p = 0;
  for (let n = 0; n < 3; n++) {
    while (p < prefix.length && prefix[p]! >= 0x80) p++;
    if (p >= prefix.length) return undefined;
    p++;
  }
  return prefix.slice(p);
}

/** Applies one mutation to existence proof `e` (a copy made for this run). */
function mutateExist(e: ics23.IExistenceProof, [k, at, byte, ev]: Mutation, spec: "iavl" | "tendermint"): void {
  const kind = k % EXIST_KINDS;
  const path = (e.path ??= []);
  const i = path.length > 0 ? at % path.length : 0;
  const op = path[i];
  // The leaf op, made only when a mutation touches it (an absent leaf must stay absent otherwise).
  const leafOp = (): ics23.ILeafOp => (e.leaf ??= {});
  const headerValues = [0, 1, -1, 2, at % 300, -(at % 5) - 1, 2 ** 40];
  switch (kind) {
    case 0: e.key = flipAt(e.key, at, byte); break;
    case 1: e.key = appended(e.key, byte); break;
    case 2: e.key = truncated(e.key, at); break;
    case 3: e.value = flipAt(e.value, at, byte); break;
    case 4: e.value = appended(e.value, byte); break;
    case 5: e.value = truncated(e.value, at); break;
    case 6: leafOp().hash = ev; break;
    case 7: leafOp().prehashKey = ev; break;
    case 8: leafOp().prehashValue = ev; break;
    case 9: leafOp().length = ev; break;
    case 10: leafOp().prefix = flipAt(e.leaf!.prefix, at, byte); break;
    case 11: leafOp().prefix = appended(e.leaf!.prefix, byte); break;
    case 12: leafOp().prefix = truncated(e.leaf!.prefix, at); break;
    case 13: {
      // A leaf header of other numbers: height, size, version each drawn from a few telling values.
      const h = headerValues[at % 3]!;
      const s = headerValues[(at >> 2) % 4]!;
      const v = headerValues[(at >> 4) % headerValues.length]!;
      leafOp().prefix = Uint8Array.from([...zigzag(h), ...zigzag(s), ...zigzag(v)]);
      break;
    }
    case 14: e.leaf = null; break;
    case 15: path.splice(i, 1); break;
    case 16: if (op) path.splice(i, 0, { ...op }); break;
    case 17: {
      const j = path.length > 0 ? byte % path.length : 0;
      if (op && path[j]) [path[i], path[j]] = [path[j]!, op];
      break;
    }
    case 18: path.length = i; break;
    case 19: if (path.length > 0) while (path.length <= 128 + (byte % 3)) path.push({ ...path[path.length - 1]! }); break;
    case 20: path.reverse(); break;
    case 21: if (op) op.hash = ev; break;
    case 22: if (op) op.prefix = flipAt(op.prefix, byte, at); break;
    case 23: if (op) op.prefix = appended(op.prefix, byte); break;
    case 24: if (op) op.prefix = truncated(op.prefix, at); break;
    case 25: if (op) op.suffix = flipAt(op.suffix, at, byte); break;
    case 26: if (op) op.suffix = appended(op.suffix, byte, byte % 2 === 0 ? 1 : spec === "iavl" ? 33 : 32); break;
    case 27: if (op) op.suffix = new Uint8Array(0); break;
    case 28: if (op) delete op.suffix; break;
    case 29: if (op) op.suffix = Uint8Array.from(op.suffix ?? []).reverse(); break;
    case 30: {
      // An inner header with another height: below, at or above the layer, or negative.
      if (!op || spec !== "iavl") break;
      const rest = afterHeader(op.prefix ?? new Uint8Array(0));
      if (rest === undefined) break;
      const height = [i, i + 1, i + 2, 0, -1, 200][at % 6]!;
      const size = [1, 2, -1, 2 ** 40][byte % 4]!;
      op.prefix = Uint8Array.from([...zigzag(height), ...zigzag(size), ...zigzag(at % 7), ...rest]);
      break;
    }
    case 31: if (op) op.prefix = Uint8Array.from([0, ...(op.prefix ?? []).slice(1)]); break;
    case 32: if (op) op.prefix = Uint8Array.of(spec === "iavl" ? byte : byte % 2); break;
    case 33: leafOp().prefix = Uint8Array.of(0, ...(byte % 2 === 0 ? [] : [byte])); break;
    case 34: {
      // Move the sibling between prefix and suffix: the same hash input shape for another child position.
      if (!op) break;
      const pre = op.prefix ?? new Uint8Array(0);
      const sib = spec === "iavl" ? 33 : 32;
      if ((op.suffix?.length ?? 0) === sib) {
        op.prefix = Uint8Array.from([...pre, ...op.suffix!]);
        delete op.suffix;
      } else if (pre.length > sib) {
        op.suffix = pre.slice(pre.length - sib);
        op.prefix = pre.slice(0, pre.length - sib);
      }
      break;
    }
    default:
      break; // kinds 35 to 47 act on non-existence proofs (mutateNonExist) or change nothing here
  }
}

/** Applies one mutation to a non-existence proof: to its neighbours' fields, or to which neighbours it has. */
function mutateNonExist(n: ics23.INonExistenceProof, m: Mutation): void {
  const [kind, at, byte] = m;
  const side = at % 2 === 0 ? "left" : "right";
  const other = existProofs[(at >> 1) % existProofs.length]!;
  switch (kind) {
    case 35: [n.left, n.right] = [n.right, n.left]; break;
    case 36: n.left = null; break;
    case 37: n.right = null; break;
    case 38:
    case 39: n[side] = ics23.ExistenceProof.decode(ics23.ExistenceProof.encode(other).finish()); break;
    case 40: n.key = flipAt(n.key, at, byte); break;
    case 41: n.key = new Uint8Array(0); break;
    default: {
      const e = n[side] ?? n[side === "left" ? "right" : "left"];
      if (e) mutateExist(e, m, "iavl");
    }
  }
}

/** The root `e` hashes to by `@confio/ics23`'s arithmetic (whatever its ops), or undefined when it cannot be computed. */
function rehash(e: ics23.IExistenceProof | null | undefined): Uint8Array | undefined {
  if (e == null) return undefined;
  try {
    return calculateExistenceRoot(e);
  } catch {
    return undefined;
  }
}

/** The hash of `e`'s leaf and its first `n` steps, or undefined. */
function hashBelow(e: ics23.IExistenceProof, n: number): Uint8Array | undefined {
  try {
    let h = applyLeaf(e.leaf!, e.key!, e.value!);
    for (let i = 0; i < n; i++) h = applyInner(e.path![i]!, h);
    return h;
  } catch {
    return undefined;
  }
}

/**
 * Where the two sides of a non-existence proof meet: how many top steps they share, and the hash of each side's
 * subtree below the step where they part (each is written into the other side's parting step).
 */
interface Seams {
  shared: number;
  leftHash: Uint8Array;
  rightHash: Uint8Array;
}

function seamsOf(n: ics23.INonExistenceProof): Seams | undefined {
  const l = n.left?.path;
  const r = n.right?.path;
  if (!l || !r || !n.left || !n.right) return undefined;
  const hexOf = (a: Uint8Array | null | undefined): string => toHex(a ?? new Uint8Array(0));
  const same = (a: ics23.IInnerOp, c: ics23.IInnerOp): boolean => hexOf(a.prefix) === hexOf(c.prefix) && hexOf(a.suffix) === hexOf(c.suffix);
  let shared = 0;
  while (shared < l.length && shared < r.length && same(l[l.length - 1 - shared]!, r[r.length - 1 - shared]!)) shared++;
  const leftHash = hashBelow(n.left, l.length - 1 - shared);
  const rightHash = hashBelow(n.right, r.length - 1 - shared);
  return leftHash && rightHash ? { shared, leftHash, rightHash } : undefined;
}

/** Replaces `old` with `now` inside `a` (first occurrence), or returns `a` unchanged. */
function replaced(a: Uint8Array | null | undefined, old: Uint8Array, now: Uint8Array): Uint8Array | null | undefined {
  if (a == null) return a;
  const hex = toHex(a);
  const at = hex.indexOf(toHex(old));
  if (at < 0 || at % 2 !== 0) return a;
  const out = Uint8Array.from(a);
  out.set(now, at / 2);
  return out;
}

/**
 * After mutating one side of a non-existence proof, writes each side's new subtree hash into the other side's parting
 * step, so that both sides hash to one root again and the neighbour rules, not the root, decide.
 */
function reseam(n: ics23.INonExistenceProof, s: Seams): void {
  if (!n.left?.path || !n.right?.path) return;
  const il = n.left.path.length - 1 - s.shared;
  const ir = n.right.path.length - 1 - s.shared;
  if (il < 0 || ir < 0) return;
  const leftHash = hashBelow(n.left, il);
  const rightHash = hashBelow(n.right, ir);
  if (!leftHash || !rightHash || leftHash.length !== 32 || rightHash.length !== 32) return;
  const lp = n.left.path[il]!;
  const rp = n.right.path[ir]!;
  n.right.path[ir] = { ...rp, prefix: replaced(rp.prefix, s.leftHash, leftHash) };
  n.left.path[il] = { ...lp, suffix: replaced(lp.suffix, s.rightHash, rightHash) };
}

/** The key a mutated non-existence proof is asked about: the original, or one placed by its (mutated) neighbours. */
function queryKey(s: Sample, n: ics23.INonExistenceProof | null | undefined, pick: number): Uint8Array {
  const l = n?.left?.key;
  const r = n?.right?.key;
  switch (pick % 4) {
    case 1: return l ? Uint8Array.from([...l, 0]) : s.key;
    case 2: return r ? r : s.key;
    case 3: return r && r.length > 0 ? r.slice(0, -1) : s.key;
    default: return s.key;
  }
}

describe("differential: iavlite/verify against @confio/ics23 + Go's rules", () => {
  it("accepts every valid proof of the store, as the reference does", () => {
    const t = tally("valid store proofs");
    for (const s of corpus) {
      const [ours, ref] = both(s.proof, s.key, s.value);
      expect(ref).toBe(true);
      expect(ours).toBe(true);
      t.add(ours, ref);
    }
    expect(corpus.filter((s) => s.value === undefined).length).toBeGreaterThan(20);
    expect(corpus.filter((s) => s.value !== undefined).length).toBeGreaterThan(50);
  });

  it("structured mutations of membership and non-membership proofs: the two agree exactly", () => {
    const t = tally("structured mutations (iavl), the store's root");
    const rt = tally("structured mutations (iavl), the root the mutant hashes to");
    fc.assert(
      fc.property(fc.nat(), mutations, fc.nat(3), (pick, muts, q) => {
        const s = corpus[pick % corpus.length]!;
        const obj = ics23.CommitmentProof.decode(s.proof);
        const seams = obj.nonexist ? seamsOf(obj.nonexist) : undefined;
        for (const m of muts) {
          if (obj.exist) mutateExist(obj.exist, m, "iavl");
          else if (obj.nonexist) mutateNonExist(obj.nonexist, m);
        }
        if (obj.nonexist && seams) reseam(obj.nonexist, seams);
        const bytes = encode(obj);
        // The root the mutant hashes to, so that only the verifiers' rules (not a wrong root) can refuse it.
        const rehashed = rehash(obj.exist) ?? rehash(obj.nonexist?.left) ?? rehash(obj.nonexist?.right) ?? storeRoot;
        // As the proof it was, asked about what it proved or what the mutated proof now names; and as the other kind.
        const asked: Array<[Uint8Array, Uint8Array | undefined]> =
          s.value !== undefined
            ? [[s.key, s.value], [obj.exist?.key ?? s.key, obj.exist?.value ?? s.value], [s.key, undefined]]
            : [[queryKey(s, obj.nonexist, q), undefined], [s.key, Uint8Array.of(1)]];
        for (const [key, value] of asked) {
          for (const [r, tl] of [[storeRoot, t], [rehashed, rt]] as const) {
            const [ours, ref] = both(bytes, key, value, r);
            tl.add(ours, ref);
            if (ours !== ref) throw new Error(`disagree (ours ${ours}, reference ${ref}) on ${toHex(bytes)} key ${toHex(key)} root ${toHex(r)}`);
          }
        }
      }),
      { seed: 0x1ca23, numRuns: 2500 },
    );
    // Some mutants stay valid (a changed nonexist.key, a key still inside the gap): both accept those. Against the
    // root they hash to, many more pass the hashing and are judged by the rules alone.
    expect(t.bothAccept).toBeGreaterThan(0);
    expect(t.bothRefuse).toBeGreaterThan(t.runs / 2);
    expect(rt.bothAccept).toBeGreaterThan(t.bothAccept);
  });

  it("byte mutations of the encoded proofs: never accepted when the reference refuses", () => {
    const t = tally("byte mutations (iavl)");
    const edit = fc.tuple(fc.nat(5), fc.nat(1 << 16), fc.nat(255));
    fc.assert(
      fc.property(fc.nat(), fc.array(edit, { minLength: 1, maxLength: 4 }), (pick, edits) => {
        const s = corpus[pick % corpus.length]!;
        let b = Array.from(s.proof);
        for (const [kind, at, byte] of edits) {
          const i = at % b.length;
          if (kind === 0) b[i] = b[i]! ^ (1 << (byte % 8));
          else if (kind === 1) b[i] = byte;
          else if (kind === 2) b.splice(i, 0, byte);
          else if (kind === 3) b.splice(i, 1);
          else if (kind === 4) b = b.slice(0, i);
          else b.splice(i, 0, ...b.slice(i, i + 1 + (byte % 40)));
          if (b.length === 0) b = [byte];
        }
        const bytes = Uint8Array.from(b);
        for (const [key, value] of [[s.key, s.value], [s.key, s.value === undefined ? Uint8Array.of(1) : undefined]] as const) {
          const [ours, ref] = both(bytes, key, value);
          t.add(ours, ref);
          if (ours && !ref) throw new Error(`accepted what the reference refuses: ${toHex(bytes)}`);
          if (ref && !ours) expectNotCanonical(bytes);
        }
      }),
      { seed: 0xb17e, numRuns: 2000 },
    );
  });

  it("random bytes and random well-formed proofs: never accepted when the reference refuses, never a throw", () => {
    const t = tally("random input (iavl)");
    const bytesArb = fc.uint8Array({ maxLength: 64 });
    // fast-check's records have no prototype, which protobufjs's encoder needs: spread each into a plain object.
    const plain = <T extends object>(o: T): T => ({ ...o });
    const op = fc.record({ hash: enumValue, prefix: bytesArb, suffix: fc.option(bytesArb, { nil: undefined }) }).map(plain);
    const leaf = fc
      .record({ hash: enumValue, prehashKey: enumValue, prehashValue: enumValue, length: enumValue, prefix: bytesArb })
      .map(plain);
    const exist = fc
      .record({ key: bytesArb, value: bytesArb, leaf: fc.option(leaf, { nil: undefined }), path: fc.array(op, { maxLength: 6 }) })
      .map(plain);
    const proof = fc.oneof(
      fc.uint8Array({ maxLength: 400 }),
      exist.map((e) => encode({ exist: e })),
      fc
        .record({ key: bytesArb, left: fc.option(exist, { nil: undefined }), right: fc.option(exist, { nil: undefined }) })
        .map((n) => encode({ nonexist: plain(n) })),
    );
    fc.assert(
      fc.property(proof, bytesArb, bytesArb, fc.boolean(), (bytes, key, value, realRoot) => {
        const r = realRoot ? storeRoot : value;
        const m = verifyMembership(bytes, r, key, value);
        expect(bareMembership(bytes, r, key, value)).toBe(m);
        const refM = referenceMembership(bytes, r, key, value);
        const n = verifyNonMembership(bytes, r, key);
        expect(bareNonMembership(bytes, r, key)).toBe(n);
        const refN = referenceNonMembership(bytes, r, key);
        t.add(m, refM);
        t.add(n, refN);
        expect(m && !refM).toBe(false);
        expect(n && !refN).toBe(false);
      }),
      { seed: 0x5eed, numRuns: 1500 },
    );
  });

  it("app-level proofs (tendermintSpec): valid ones accepted, structured mutations agree exactly, byte mutations never accepted alone", () => {
    const valid = tally("valid app proofs");
    const structured = tally("structured mutations (app), the app hash");
    const rehashed = tally("structured mutations (app), the root the mutant hashes to");
    const bytewise = tally("byte mutations (app)");
    const next = rng(77);
    const names = ["acc", "bank", "distribution", "gov", "ibc", "mint", "staking"];
    const apps = [2, 3, 5, 7].map((n) => {
      const stores = new Map(names.slice(0, n).map((name) => [name, randomBytes(next, 32)] as const));
      return { stores, ...appProofs(stores) };
    });
    const samples = apps.flatMap((a) => [...a.proofs].map(([name, p]) => ({ appHash: a.appHash, name, hash: a.stores.get(name)!, p })));
    const check = (bytes: Uint8Array, appHash: Uint8Array, name: string, hash: Uint8Array): [boolean, boolean] => {
      const ours = verifyStoreInApp(bytes, appHash, name, hash);
      expect(bareStoreInApp(bytes, appHash, enc.encode(name), hash)).toBe(ours);
      return [ours, referenceStoreInApp(bytes, appHash, enc.encode(name), hash)];
    };
    for (const s of samples) {
      const [ours, ref] = check(encode(s.p), s.appHash, s.name, s.hash);
      expect([ours, ref]).toEqual([true, true]);
      valid.add(ours, ref);
    }
    fc.assert(
      fc.property(fc.nat(), mutations, (pick, muts) => {
        const s = samples[pick % samples.length]!;
        const obj = ics23.CommitmentProof.decode(encode(s.p));
        for (const m of muts) mutateExist(obj.exist!, m, "tendermint");
        const bytes = encode(obj);
        for (const [appHash, tl] of [[s.appHash, structured], [rehash(obj.exist) ?? s.appHash, rehashed]] as const) {
          const [ours, ref] = check(bytes, appHash, s.name, s.hash);
          tl.add(ours, ref);
          if (ours !== ref) throw new Error(`disagree (ours ${ours}, reference ${ref}) on ${toHex(bytes)} root ${toHex(appHash)}`);
        }
      }),
      { seed: 0x7e4d, numRuns: 1200 },
    );
    fc.assert(
      fc.property(fc.nat(), fc.nat(1 << 16), fc.nat(255), (pick, at, byte) => {
        const s = samples[pick % samples.length]!;
        const b = encode(s.p);
        b[at % b.length] = byte;
        const [ours, ref] = check(b, s.appHash, s.name, s.hash);
        bytewise.add(ours, ref);
        if (ref && !ours) expectNotCanonical(b);
        expect(ours && !ref).toBe(false);
      }),
      { seed: 0xa99, numRuns: 800 },
    );
    for (const t of tallies) console.log(t.toString());
  });
});
