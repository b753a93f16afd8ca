/**
 * `iavlite import <dir>`: a state-sync stream (as `export` writes it) into a new store, every node checked.
 * @module
 */
import { createReadStream, statSync } from "node:fs";
import type { Command } from "commander";
import { decodeItems } from "../sync/wire.js";
import { toHex } from "../base/bytes.js";
import { IavlError } from "../base/errors.js";
import { EMPTY_HASH } from "../base/hash.js";
import { Tree } from "../api/tree.js";
import { action } from "./command.js";
import { closing } from "./store.js";
import { globals, out, outJson, parseHex, UsageError, versionArg, withProgress } from "./format.js";

interface ImportCliOptions {
  version: number;
  hash?: string;
  input?: string;
}

/** Adds the `import` command to `program`. */
export function registerImport(program: Command): void {
  program
    .command("import")
    .description("build a new (plain) store from a stream of length-delimited protobuf SnapshotIAVLItems, as export writes one store; nothing is left behind on failure")
    .argument("<dir>", "new store folder (missing or empty)")
    .requiredOption("--version <V>", "the version the stream is of", versionArg)
    .option("--hash <H>", "refuse the stream unless its root hash is H (hex); an empty stream is refused without it")
    .option("-i, --input <file>", "read from FILE (default: stdin)")
    .action(action({ folder: "none", takes: ["json"] }, (dir: string, opts: ImportCliOptions, cmd: Command) => importCmd(dir, opts, cmd)));
}

async function importCmd(dir: string, opts: ImportCliOptions, cmd: Command): Promise<number> {
  const g = globals(cmd);
  const expectedHash = opts.hash === undefined ? undefined : parseHex(opts.hash, "--hash");
  if (expectedHash !== undefined && expectedHash.length !== 32) throw new UsageError(`--hash must be 32 bytes (64 hex digits), got ${expectedHash.length}`);
  if (opts.input === undefined && process.stdin.isTTY === true) {
    throw new UsageError("no stream to import: give -i FILE or pipe the stream into stdin");
  }
  // Progress by bytes read when the length is known (a file), else by nodes imported. The stat also finds a missing
  // file before a stream is opened on it.
  const total = opts.input === undefined ? undefined : statSync(opts.input).size;
  const source: AsyncIterable<Uint8Array> = opts.input === undefined ? process.stdin : createReadStream(opts.input, { highWaterMark: 1 << 20 });
  let bytes = 0;
  let nodes = 0;
  const tree = await withProgress(total === undefined ? "import (nodes)" : "import (bytes)", total, (bar) => {
    const counted = async function* (): AsyncGenerator<Uint8Array> {
      for await (const c of source) {
        bytes += c.length;
        if (total !== undefined) bar.update(bytes);
        yield c;
      }
      // Thrown inside the stream, so that the import fails and leaves nothing: no bytes is more often a failed export
      // or a forgotten pipe than an empty tree, whose root the caller then names.
      if (bytes === 0 && expectedHash === undefined) {
        throw new IavlError(
          "INVALID_SNAPSHOT",
          `the stream from ${opts.input ?? "stdin"} is empty; an empty tree exports nothing too: to import one, give --hash ${toHex(EMPTY_HASH)} (its root hash)`,
        );
      }
    };
    const onProgress = (n: number): void => {
      nodes = n;
      if (total === undefined) bar.update(n);
    };
    return Tree.import(dir, decodeItems(counted()), { version: opts.version, expectedHash, onProgress });
  });
  return closing(tree, () => {
    const summary = { dir, version: tree.version, size: tree.size, nodes, bytes, hash: toHex(tree.hash) };
    if (g.json) outJson(summary);
    else {
      out(`imported version ${summary.version} into ${dir}: ${summary.size} keys, ${nodes} nodes, ${bytes} bytes`);
      out(`root ${summary.hash}`);
    }
    return 0;
  });
}
