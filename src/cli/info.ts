/**
 * `iavlite info <dir>`: what a store holds and what it costs on disk.
 * @module
 */
import type { Command } from "commander";
import { storeInfo, type StoreInfo } from "./info-summary.js";
import { toHex } from "../base/bytes.js";
import { action, globals, humanBytes, out, outJson } from "./format.js";

/** Adds the `info` command to `program`. */
export function registerInfo(program: Command): void {
  program
    .command("info")
    .description("summarize a store: versions, checkpoints, shards, pages, disk use and the current writer (every store of a multi-store folder)")
    .argument("<dir>", "store folder")
    .action(
      action((dir: string, _opts: object, cmd: Command) => {
        const info = storeInfo(dir);
        if (globals(cmd).json) outJson(infoJson(info));
        else printInfo(info);
        return 0;
      }, "each"),
    );
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
