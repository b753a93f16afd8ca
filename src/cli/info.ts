/**
 * `iavlite info <dir>`: what a store holds and what it costs on disk; on a multi-store folder, every store (or those
 * `--store` names) and the folder's latest whole version with its app hash.
 * @module
 */
import type { Command } from "commander";
import { isIavlError } from "../base/errors.js";
import { toHex } from "../base/bytes.js";
import { MultiTree } from "../api/multi-tree.js";
import { action, type FolderHead } from "./command.js";
import { storeInfo, type StoreInfo } from "./info-summary.js";
import { globals, humanBytes, out, outJson } from "./format.js";

/** Adds the `info` command to `program`. */
export function registerInfo(program: Command): void {
  program
    .command("info")
    .description(
      "summarize a store: versions, checkpoints, shards, pages, disk use and the current writer; on a multi-store folder " +
        "also the latest version every store holds and its app hash",
    )
    .argument("<dir>", "store folder, or multi-store folder (every store, unless --store names some)")
    .action(
      action({ folder: "each", takes: ["json", "store"], head: appHead }, (dir: string, _opts: object, cmd: Command) => {
        const info = storeInfo(dir);
        if (globals(cmd).json) outJson(infoJson(info));
        else printInfo(info);
        return 0;
      }),
    );
}

/**
 * The folder's latest whole version and its app hash, read as a query process would. A folder a killed writer left
 * may not open so (a lost commit marker, a rollback half done): info still reports every store, and says why.
 */
function appHead(dir: string): FolderHead {
  let version: number | null = null;
  let appHash: string | null = null;
  let unreadable: string | null = null;
  try {
    const r = MultiTree.openReadOnly(dir);
    try {
      version = r.latest > 0 ? r.latest : null;
      const h = version === null ? null : r.appHashAt(version);
      appHash = h === null ? null : toHex(h);
    } finally {
      r.close();
    }
  } catch (e) {
    // The library's refusals and SQLite's own errors (a busy or half-written file) carry a code; others are bugs.
    const code = isIavlError(e) ? e.code : e instanceof Error && typeof (e as NodeJS.ErrnoException).code === "string" ? (e as NodeJS.ErrnoException).code : undefined;
    if (code === undefined || !(e instanceof Error)) throw e;
    unreadable = `${code}: ${e.message}`;
  }
  const line =
    unreadable !== null ? `app hash     unreadable (${unreadable})` : version === null ? "app hash     none (no version committed by every store)" : `app hash     ${appHash} (version ${version}, whole in every store)`;
  return { fields: { version, appHash, ...(unreadable === null ? {} : { appHashError: unreadable }) }, lines: [`folder       ${dir}`, line] };
}

/** The JSON form: hashes as hex. */
function infoJson(i: StoreInfo): object {
  return { ...i, latest: i.latest === null ? null : { ...i.latest, hash: toHex(i.latest.hash) } };
}

function printInfo(i: StoreInfo): void {
  const v = i.versions;
  out(`store        ${i.dir} (schema ${i.schema})`);
  out(`versions     ${v.count === 0 ? "none committed" : `${v.count} kept, ${v.first} … ${v.last}`}`);
  if (i.latest !== null) out(`latest       version ${i.latest.version}, ${i.latest.size} keys, root ${toHex(i.latest.hash)}`);
  out(`checkpoints  ${i.checkpoints.count}${i.checkpoints.latest === null ? "" : ` (latest at version ${i.checkpoints.latest})`}`);
  out(`shards       ${i.shards.length} of ${i.shardSize} versions`);
  for (const s of i.shards) out(`  shard ${s.id}  versions ${s.first}–${s.last}: ${s.branchRows} branch rows`);
  out(`replaced     ${i.orphanedBranches} branch rows no longer in the latest tree, deleted by the prune whose base passes them`);
  out(`page rows    ${i.pageRows} (subtrees of at most 16 leaves below the branch rows)`);
  out(`leaves rows  ${i.leafRows} (values and leaf hashes, one per key per version changed)`);
  out(`ops rows     ${i.opsRows} (operations of the versions replays may need)`);
  const p = i.pages;
  out(`pages        ${p.pageCount} × ${p.pageSize} B, ${p.freelistCount} free (${humanBytes(p.freelistCount * p.pageSize)} reclaimable)`);
  const d = i.disk;
  out(`disk         ${humanBytes(d.total)}: iavl.sqlite ${humanBytes(d.db)}, -wal ${humanBytes(d.wal)}, -shm ${humanBytes(d.shm)}`);
  const h = i.writer.holder;
  const who = h === null ? "unknown process" : `process ${h.pid} on ${h.host} since ${h.since}`;
  out(`writer       ${i.writer.held ? `held by ${who}` : h === null ? "none" : `none (last: ${who})`}`);
}
