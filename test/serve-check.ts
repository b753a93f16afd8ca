/**
 * Checks shared by the serve tests: an answer of `/v1/query` or of `abci_query` verified the way a client verifies it,
 * with @confio/ics23 (iavlSpec for the store level, tendermintSpec for the app level) and, for `/v1/query`, also with
 * iavlite/verify, which adds the rules of Go's cosmos/ics23 that a chain's light client applies.
 */
import { ics23, iavlSpec, tendermintSpec, verifyExistence, verifyMembership, verifyNonExistence, verifyNonMembership } from "@confio/ics23";
import { fromHex, toHex, Tree } from "../src/index.js";
import * as goRules from "../src/verify/index.js";
import { applyVersion } from "./fixtures/version-ops.js";

/** The JSON of a 200 answer of `/v1/query`. */
export interface QueryJson {
  height: number;
  key: string;
  value: string | null;
  storeHash: string;
  appHash: string | null;
  proof: { store: string | null; app: string | null };
  proofError?: string;
}

/** The stores of the serve tests' writer (fixtures/serve-writer.ts). */
export const SERVE_STORES = ["bank", "lockup", "staking"];

/** `applyVersion`'s arguments after the tree for store `i` at `version`, in the writer and in the tests' models. */
export const serveOps = (i: number, version: number): [number, number, number] => [version * 10 + i, 120, 300];

/**
 * The writer's stores replayed in memory: `model(i, v)` is store i at version v, as the writer committed it (each
 * model is built forward on demand, so ask for versions in any order up to the newest needed).
 */
export function serveModels(): (i: number, v: number) => ReturnType<Tree["at"]> {
  const models = SERVE_STORES.map(() => Tree.memory());
  return (i, v) => {
    const m = models[i]!;
    while (m.version < v) {
      applyVersion(m, ...serveOps(i, m.version + 1));
      m.commit();
    }
    return m.at(v);
  };
}

const decode = (hex: string): ics23.CommitmentProof => ics23.CommitmentProof.decode(fromHex(hex));

/**
 * True when both proofs of `q` verify: the key's (non-)existence against `storeHash` under iavlSpec, and the store's
 * hash under the app hash with tendermintSpec (unless the folder has no app hash).
 */
export function proofsVerify(q: QueryJson, store: string): boolean {
  if (q.proof.store === null) return false;
  const key = fromHex(q.key);
  const root = fromHex(q.storeHash);
  const p = decode(q.proof.store);
  const storeOk = q.value === null ? verifyNonMembership(p, iavlSpec, root, key) : verifyMembership(p, iavlSpec, root, key, fromHex(q.value));
  const bytes = fromHex(q.proof.store);
  const storeGo = q.value === null ? goRules.verifyNonMembership(bytes, root, key) : goRules.verifyMembership(bytes, root, key, fromHex(q.value));
  if (!storeOk || !storeGo) return false;
  if (q.appHash === null) return q.proof.app === null;
  if (q.proof.app === null) return false;
  const appHash = fromHex(q.appHash);
  return (
    verifyMembership(decode(q.proof.app), tendermintSpec, appHash, new TextEncoder().encode(store), root) &&
    goRules.verifyStoreInApp(fromHex(q.proof.app), appHash, store, root)
  );
}

/** A proof op as cosmjs decodes it. */
export interface ProofOp {
  type: string;
  key: Uint8Array;
  data: Uint8Array;
}

/**
 * Verifies an `abci_query` answer as cosmjs's `QueryClient.queryStoreVerified` does: op 0 `ics23:iavl` keyed by the
 * query key, op 1 `ics23:simple` keyed by the store name; the store proof against the store hash the app proof
 * carries, the app proof against `appHash`. Throws on any failure; returns the store hash proven.
 */
export function verifyAbci(ops: readonly ProofOp[], store: string, key: Uint8Array, value: Uint8Array, appHash: Uint8Array): Uint8Array {
  if (ops.length !== 2) throw new Error(`expected 2 proof ops, got ${ops.length}`);
  const parse = (op: ProofOp, type: string, k: Uint8Array): ics23.CommitmentProof => {
    if (op.type !== type) throw new Error(`op type ${op.type}, expected ${type}`);
    if (toHex(op.key) !== toHex(k)) throw new Error(`op key ${toHex(op.key)}, expected ${toHex(k)}`);
    return ics23.CommitmentProof.decode(op.data);
  };
  const sub = parse(ops[0]!, "ics23:iavl", key);
  const top = parse(ops[1]!, "ics23:simple", new TextEncoder().encode(store));
  if (!top.exist?.value) throw new Error("the store proof is not an existence proof");
  const storeHash = top.exist.value;
  if (value.length === 0) {
    if (!sub.nonexist) throw new Error("expected a non-existence proof");
    verifyNonExistence(sub.nonexist, iavlSpec, storeHash, key);
  } else {
    if (!sub.exist?.value) throw new Error("expected an existence proof");
    verifyExistence(sub.exist, iavlSpec, storeHash, key, value);
  }
  verifyExistence(top.exist, tendermintSpec, appHash, new TextEncoder().encode(store), storeHash);
  return storeHash;
}
