/**
 * `iavlite get <dir> <key>`: a value at a version, optionally with its ICS23 proof checked against the root hash. On
 * a multi-store folder the key is looked up in every store (or those `--store` names) at one version every store
 * holds whole, each answer naming its store; with `--prove` each store's root is also proven under the app hash.
 * @module
 */
import { ics23, iavlSpec, tendermintSpec, verifyMembership, verifyNonMembership } from "@confio/ics23";
import type { Command } from "commander";
import { IavlError } from "../base/errors.js";
import { toHex } from "../base/bytes.js";
import type { ReadonlyTree } from "../tree/readonly-tree.js";
import { action, folderOf, type Folder } from "./command.js";
import { bytesJson, bytesMode, bytesText, globals, note, out, outJson, parseBytes, versionArg, type BytesMode, type GlobalOptions } from "./format.js";
import { checkWhole, pickVersion, withFolderReader, withReader } from "./store.js";

interface GetOptions {
  version?: number;
  prove?: boolean;
}

/** Adds the `get` command to `program`. */
export function registerGet(program: Command): void {
  program
    .command("get")
    .description(
      "print the value of a key (exit status 1 when absent, with --prove too, which still prints the proof of absence; " +
        "with --prove, also 1 when a proof does not verify). On a multi-store folder: the key in every store (or those " +
        "--store names), one line per store, exit status 1 when no store has it",
    )
    .argument("<dir>", "store folder, or multi-store folder")
    .argument("<key>", "the key (UTF-8, or hex with --hex)")
    .option("--version <V>", "read version V (default: the latest; on a multi-store folder, the latest every store holds)", versionArg)
    .option("--prove", "also print the key's ICS23 proof (hex protobuf) and verify it against the version's root hash (and that root under the app hash)")
    .action(action({ folder: "folder", takes: ["json", "hex", "utf8", "store"] }, (dir: string, keyText: string, opts: GetOptions, cmd: Command) => get(dir, keyText, opts, cmd)));
}

/** What one store answered. */
interface Answer {
  version: number;
  root: Uint8Array;
  key: Uint8Array;
  value: Uint8Array | undefined;
  proof?: { hex: string; verified: boolean };
  /** The store's root proven under the app hash (multi-store folders, with --prove). */
  app?: { hex: string; verified: boolean };
}

async function get(dir: string, keyText: string, opts: GetOptions, cmd: Command): Promise<number> {
  const g = globals(cmd);
  const key = parseBytes(keyText, g, "the key");
  const folder = folderOf(dir, cmd);
  if (folder !== undefined) return getInFolder(folder, key, opts, g);
  return withReader(dir, (h) => {
    const version = pickVersion(h, opts.version);
    const a = lookUp(h.at(version), version, key, opts.prove === true);
    const mode = bytesMode(g);
    if (g.json) outJson(answerJson(a, mode));
    else printAnswer(a, mode);
    // Why the exit status is 1 (without --prove, printAnswer said so already).
    if (!g.json && a.proof !== undefined && a.value === undefined) note(`key ${bytesText(key, mode)} not found at version ${version}`);
    return statusOf(a);
  });
}

/** The key in each chosen store of a multi-store folder, at one whole version. */
function getInFolder(folder: Folder, key: Uint8Array, opts: GetOptions, g: GlobalOptions): Promise<number> {
  const mode = bytesMode(g);
  return withFolderReader(folder.dir, (r) => {
    const version = opts.version ?? r.latest;
    if (version === 0) throw new IavlError("VERSION_NOT_FOUND", `${folder.dir} has no version that every store committed yet`);
    checkWhole(r, folder.dir, version);
    const appHash = r.appHashAt(version)!;
    const answers = folder.chosen.map((name) => {
      const a = lookUp(r.at(name, version), version, key, opts.prove === true);
      if (opts.prove === true) {
        const p = r.appProof(version, name);
        // The store's root under the app hash: the SDK's second proof op.
        const verified = verifies(() => verifyMembership(p, tendermintSpec, appHash, new TextEncoder().encode(name), a.root));
        a.app = { hex: toHex(ics23.CommitmentProof.encode(p).finish()), verified };
      }
      return { name, a };
    });
    if (g.json) {
      outJson({ version, appHash: toHex(appHash), stores: answers.map(({ name, a }) => ({ name, ...answerJson(a, mode) })) });
    } else if (opts.prove === true) {
      out(`app hash ${toHex(appHash)} (version ${version})`);
      for (const { name, a } of answers) {
        out(`── store ${name}`);
        printAnswer(a, mode);
      }
    } else {
      const width = Math.max(...answers.map(({ name }) => name.length));
      for (const { name, a } of answers) out(`${name.padEnd(width)}  ${a.value === undefined ? "(absent)" : bytesText(a.value, mode)}`);
    }
    const found = answers.some(({ a }) => a.value !== undefined);
    if (!found && !g.json) note(`key ${bytesText(key, mode)} not found in ${folder.narrowed ? "the stores named" : "any store"} at version ${version}`);
    // The key must be in some store, and with --prove every proof (of presence or absence) must verify.
    return found && answers.every(({ a }) => proofHolds(a)) ? 0 : 1;
  });
}

/** Reads `key` in `view`, with its proof checked when `prove`. */
function lookUp(view: ReadonlyTree, version: number, key: Uint8Array, prove: boolean): Answer {
  const value = view.get(key);
  const root = view.hash;
  const a: Answer = { version, root, key, value };
  if (prove) {
    const p = view.proof(key);
    const verified = verifies(() => (value === undefined ? verifyNonMembership(p, iavlSpec, root, key) : verifyMembership(p, iavlSpec, root, key, value)));
    a.proof = { hex: toHex(ics23.CommitmentProof.encode(p).finish()), verified };
  }
  return a;
}

function kind(a: Answer): string {
  return a.value === undefined ? "non-membership" : "membership";
}

/** True unless a proof asked for (of the key, or of the store's root under the app hash) does not verify. */
function proofHolds(a: Answer): boolean {
  return (a.proof === undefined || a.proof.verified) && (a.app === undefined || a.app.verified);
}

/**
 * 1 when the key is absent, with --prove as without (README and --help: an absent key is exit status 1; the proof of
 * its absence is still printed), or when a proof does not verify.
 */
function statusOf(a: Answer): number {
  return a.value !== undefined && proofHolds(a) ? 0 : 1;
}

function answerJson(a: Answer, mode: BytesMode): object {
  return {
    version: a.version,
    root: toHex(a.root),
    ...bytesJson("key", a.key, mode),
    found: a.value !== undefined,
    ...(a.value === undefined ? {} : bytesJson("value", a.value, mode)),
    ...(a.proof === undefined ? {} : { proof: a.proof.hex, proofKind: kind(a), verified: a.proof.verified }),
    ...(a.app === undefined ? {} : { appProof: a.app.hex, appVerified: a.app.verified }),
  };
}

function printAnswer(a: Answer, mode: BytesMode): void {
  if (a.proof === undefined) {
    if (a.value !== undefined) out(bytesText(a.value, mode));
    else note(`key ${bytesText(a.key, mode)} not found at version ${a.version}`);
    return;
  }
  out(`key      ${bytesText(a.key, mode)}`);
  out(`version  ${a.version}`);
  out(`root     ${toHex(a.root)}`);
  out(`value    ${a.value === undefined ? "(absent)" : bytesText(a.value, mode)}`);
  out(`proof    ${a.proof.hex}`);
  if (a.proof.verified) out(`${kind(a)} proof verified against the root of version ${a.version}`);
  else note(`the ${kind(a)} proof does NOT verify against the root of version ${a.version}`);
  if (a.app === undefined) return;
  out(`app      ${a.app.hex}`);
  if (a.app.verified) out(`the root is proven under the app hash of version ${a.version}`);
  else note(`the store's root does NOT verify under the app hash of version ${a.version}`);
}

/** Runs a check with @confio/ics23, independently of the code that built the proof; a proof it cannot read fails. */
function verifies(check: () => boolean): boolean {
  try {
    return check();
  } catch {
    return false;
  }
}
