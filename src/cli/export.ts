/**
 * `iavlite export <dir>`: one version as the state-sync stream of length-delimited protobuf `SnapshotIAVLItem`s.
 * @module
 */
import { createWriteStream, rmSync } from "node:fs";
import type { Writable } from "node:stream";
import { finished } from "node:stream/promises";
import type { Command } from "commander";
import { encodeItems } from "../sync/wire.js";
import type { ExportNode } from "../tree/export-node.js";
import { toHex } from "../base/bytes.js";
import { action, folderOf } from "./command.js";
import { storeDir } from "../api/multi-folder.js";
import { claimStdout, globals, note, UsageError, versionArg, withProgress } from "./format.js";
import { pickVersion, withReader } from "./store.js";

interface ExportOptions {
  version?: number;
  output?: string;
}

/** Bytes gathered before a write: fewer, larger writes. */
const CHUNK = 1 << 16;

/** Adds the `export` command to `program`. */
export function registerExport(program: Command): void {
  program
    .command("export")
    .description("write a version as a stream of length-delimited protobuf SnapshotIAVLItems (cosmos state sync)")
    .argument("<dir>", "store folder, or multi-store folder with --store NAME (a stream holds one store)")
    .option("--version <V>", "export version V (default: the latest)", versionArg)
    .option("-o, --output <file>", "write to FILE (default: stdout)")
    .action(action({ folder: "folder", takes: ["json", "store"] }, (dir: string, opts: ExportOptions, cmd: Command) => exportCmd(dir, opts, cmd)));
}

async function exportCmd(dir: string, opts: ExportOptions, cmd: Command): Promise<number> {
  const g = globals(cmd);
  const folder = folderOf(dir, cmd);
  if (folder !== undefined && (!folder.narrowed || folder.chosen.length !== 1)) {
    // A state-sync stream is one store's tree, as import builds one store.
    throw new UsageError(`${dir} holds several stores and a snapshot stream holds one: pass one --store (stores: ${folder.stores.join(", ")})`);
  }
  const path = folder === undefined ? dir : storeDir(dir, folder.chosen[0]!);
  if (opts.output === undefined && process.stdout.isTTY === true) {
    throw new UsageError("refusing to write a binary stream to a terminal: give -o FILE or redirect stdout");
  }
  // stdout is for the stream: a failure must not put a JSON value there.
  if (opts.output === undefined) claimStdout();
  return withReader(path, async (h) => {
    const version = pickVersion(h, opts.version);
    const view = h.at(version);
    const hash = view.hash;
    let nodes = 0;
    // A tree of n keys has n leaves and n - 1 inner nodes.
    await withProgress(`export v${version}`, Math.max(0, view.size * 2 - 1), async (bar) => {
      const counted = function* (): Generator<ExportNode> {
        for (const n of view.export()) {
          yield n;
          if (++nodes % 1024 === 0) bar.update(nodes);
        }
      };
      try {
        const dest = opts.output === undefined ? process.stdout : createWriteStream(opts.output);
        await writeAll(dest, batched(encodeItems(counted()), CHUNK), opts.output !== undefined);
      } catch (e) {
        // A partial stream must not pass for an export.
        if (opts.output !== undefined) rmSync(opts.output, { force: true });
        throw e;
      }
    });
    const summary = { ...(folder === undefined ? {} : { store: folder.chosen[0] }), version, nodes, hash: toHex(hash), output: opts.output ?? null };
    // stdout may be the stream itself; the summary goes there only when the stream went to a file.
    if (g.json) (opts.output === undefined ? process.stderr : process.stdout).write(JSON.stringify(summary, null, 2) + "\n");
    else note(`exported version ${version}: ${nodes} nodes, root ${summary.hash}`);
    return 0;
  });
}

/** Concatenates small arrays into chunks of about `size` bytes. */
function* batched(parts: Iterable<Uint8Array>, size: number): Generator<Uint8Array> {
  let buf: Uint8Array[] = [];
  let n = 0;
  for (const p of parts) {
    buf.push(p);
    n += p.length;
    if (n >= size) {
      yield Buffer.concat(buf, n);
      buf = [];
      n = 0;
    }
  }
  if (n > 0) yield Buffer.concat(buf, n);
}

/** Writes every chunk with backpressure; ends `dest` (and waits for it to be flushed) when `end`. */
async function writeAll(dest: Writable, chunks: Iterable<Uint8Array>, end: boolean): Promise<void> {
  // An error between waits is kept by the stream (`errored`) and seen at the next wait; this listener only stops
  // it from being an uncaught 'error' event meanwhile.
  const ignore = (): void => undefined;
  dest.on("error", ignore);
  try {
    for (const c of chunks) {
      if (dest.errored !== null || dest.destroyed) break;
      if (!dest.write(c)) await drained(dest);
    }
    if (dest.errored !== null) throw dest.errored;
    if (end) {
      dest.end();
      await finished(dest);
    }
  } finally {
    dest.off("error", ignore);
  }
}

/** Resolves on `drain`; rejects when `dest` fails or closes first. Leaves no listener behind. */
function drained(dest: Writable): Promise<void> {
  return new Promise((resolve, reject) => {
    if (dest.errored !== null) return reject(dest.errored);
    if (dest.destroyed) return reject(new Error("the output closed before the export finished"));
    const settle = (e?: Error): void => {
      dest.off("drain", onDrain);
      dest.off("error", onError);
      dest.off("close", onClose);
      if (e === undefined) resolve();
      else reject(e);
    };
    const onDrain = (): void => settle();
    const onError = (e: Error): void => settle(e);
    const onClose = (): void => settle(new Error("the output closed before the export finished"));
    dest.on("drain", onDrain);
    dest.on("error", onError);
    dest.on("close", onClose);
  });
}
