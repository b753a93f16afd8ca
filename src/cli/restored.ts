/**
 * A folder `iavlite restore` just restored, checked: a multi-store brought to the newest version every store holds
 * whole (its files were restored one by one, each as its replica last shipped it; api/multi-restore.ts), or to the
 * version asked for, a plain store rolled back to it, and every stored hash of that version verified as `verify`
 * does. Prints the version and its root or app hash.
 * @module
 */
import { IavlError } from "../base/errors.js";
import { toHex } from "../base/bytes.js";
import { storeDir } from "../api/multi-folder.js";
import { settleRestoredFolder } from "../api/multi-restore.js";
import { Tree } from "../api/tree.js";
import { out, outJson } from "./format.js";
import type { RestoredFiles } from "./litestream.js";
import { withReader } from "./store.js";
import { auditOf, printReport } from "./verify.js";

/** One store's check: its root hash at the restored version, and the audit of that version. */
interface Checked {
  name: string;
  hash: string;
  report: NonNullable<Awaited<ReturnType<typeof auditOf>>>;
}

/**
 * Checks the folder `dir` restored as `files` says, at `version` (default: the newest whole), printing the outcome
 * (with `json`, one value after `head`'s fields). Resolves to the exit status: 1 when a hash is wrong.
 */
export async function checkRestored(dir: string, files: RestoredFiles, version: number | undefined, json: boolean, head: object): Promise<number> {
  if (!files.multi) {
    const latest = await withReader(dir, (h) => h.version);
    if (latest === 0) throw new IavlError("VERSION_NOT_FOUND", `the store restored into ${dir} has no committed version`);
    const v = version ?? latest;
    // Refused (VERSION_NOT_FOUND or VERSION_PRUNED) unless the store kept it.
    if (v !== latest) Tree.rollback(dir, v);
    const c = await check(dir, dir, v);
    if (json) outJson({ ...head, restored: latest, version: v, hash: c.hash, ok: c.report.ok, report: c.report });
    else {
      out(`version ${v}${v === latest ? "" : ` (rolled back from ${latest})`}: root ${c.hash}`);
      printReport(c.report);
    }
    return c.report.ok ? 0 : 1;
  }

  const s = settleRestoredFolder(dir, version);
  const checked: Checked[] = [];
  for (const { name } of s.restored) checked.push(await check(storeDir(dir, name), name, s.version));
  const ok = checked.every((c) => c.report.ok);
  const appHash = toHex(s.appHash);
  if (json) {
    const stores = checked.map((c, i) => ({ name: c.name, restored: s.restored[i]!.latest, hash: c.hash, ok: c.report.ok, report: c.report }));
    const markerRebuilt = files.markerMissing || s.marker === undefined;
    outJson({ ...head, marker: s.marker ?? null, markerRebuilt, whole: s.whole, version: s.version, appHash, ok, stores });
    return ok ? 0 : 1;
  }
  const marker = s.marker === undefined ? "no commit marker (rebuilt from the stores)" : `the commit marker at ${s.marker}`;
  out(`as restored: ${s.restored.map((r) => `${r.name} at ${r.latest}`).join(", ")}; ${marker}`);
  const which = version === undefined ? "the newest version whole in every store" : `rolled back from ${s.whole}, the newest whole in every store`;
  out(`version ${s.version} (${which}): app hash ${appHash}`);
  for (const c of checked) {
    out(`── store ${c.name}: root ${c.hash}`);
    printReport(c.report);
  }
  return ok ? 0 : 1;
}

/** Audits `version` of the store in `path` (named `name`): every node rehashed against its stored hash. */
async function check(path: string, name: string, version: number): Promise<Checked> {
  return withReader(path, async (h) => {
    const report = await auditOf(h, version);
    // Nothing prunes a folder just restored.
    if (report === undefined) throw new IavlError("VERSION_PRUNED", `version ${version} of ${name} is not kept`);
    return { name, hash: toHex(h.at(version).hash), report };
  });
}
