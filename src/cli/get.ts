/**
 * `iavlite get <dir> <key>`: a value at a version, optionally with its ICS23 proof checked against the root hash.
 * @module
 */
import { ics23, iavlSpec, verifyMembership, verifyNonMembership } from "@confio/ics23";
import type { Command } from "commander";
import { toHex } from "../base/bytes.js";
import type { CommitmentProof } from "../tree/proof.js";
import { action, bytesJson, bytesMode, bytesText, globals, note, out, outJson, parseBytes, versionArg } from "./format.js";
import { pickVersion, withReader } from "./store.js";

interface GetOptions {
  version?: number;
  prove?: boolean;
}

/** Adds the `get` command to `program`. */
export function registerGet(program: Command): void {
  program
    .command("get")
    .description("print the value of a key (exit status 1 when absent; with --prove, 1 when the proof does not verify)")
    .argument("<dir>", "store folder")
    .argument("<key>", "the key (UTF-8, or hex with --hex)")
    .option("--version <V>", "read version V (default: the latest)", versionArg)
    .option("--prove", "also print the key's ICS23 proof (hex protobuf) and verify it against the version's root hash")
    .action(action((dir: string, keyText: string, opts: GetOptions, cmd: Command) => get(dir, keyText, opts, cmd)));
}

async function get(dir: string, keyText: string, opts: GetOptions, cmd: Command): Promise<number> {
  const g = globals(cmd);
  const mode = bytesMode(g);
  const key = parseBytes(keyText, g, "the key");
  return withReader(dir, (h) => {
    const version = pickVersion(h, opts.version);
    const view = h.at(version);
    const value = view.get(key);
    const root = view.hash;
    let proof: { hex: string; verified: boolean } | undefined;
    if (opts.prove === true) {
      const p = view.proof(key);
      proof = { hex: toHex(ics23.CommitmentProof.encode(p).finish()), verified: check(p, root, key, value) };
    }
    if (g.json) {
      outJson({
        version,
        root: toHex(root),
        ...bytesJson("key", key, mode),
        found: value !== undefined,
        ...(value === undefined ? {} : bytesJson("value", value, mode)),
        ...(proof === undefined ? {} : { proof: proof.hex, proofKind: value === undefined ? "non-membership" : "membership", verified: proof.verified }),
      });
    } else if (proof === undefined) {
      if (value !== undefined) out(bytesText(value, mode));
      else note(`key ${bytesText(key, mode)} not found at version ${version}`);
    } else {
      out(`key      ${bytesText(key, mode)}`);
      out(`version  ${version}`);
      out(`root     ${toHex(root)}`);
      out(`value    ${value === undefined ? "(absent)" : bytesText(value, mode)}`);
      out(`proof    ${proof.hex}`);
      const kind = value === undefined ? "non-membership" : "membership";
      if (proof.verified) out(`${kind} proof verified against the root of version ${version}`);
      else note(`the ${kind} proof does NOT verify against the root of version ${version}`);
    }
    // With --prove the task is the proof: an absent key whose non-membership verified is a success.
    if (proof !== undefined) return proof.verified ? 0 : 1;
    return value === undefined ? 1 : 0;
  });
}

/** Verifies the proof with @confio/ics23, independently of the code that built it. */
function check(p: CommitmentProof, root: Uint8Array, key: Uint8Array, value: Uint8Array | undefined): boolean {
  try {
    return value === undefined ? verifyNonMembership(p, iavlSpec, root, key) : verifyMembership(p, iavlSpec, root, key, value);
  } catch {
    return false;
  }
}
