/**
 * `iavlite verify <dir>`: rehash every node of a version (or of all kept versions) and compare with the store.
 *
 * Beside a live writer that prunes, a version listed at the start may be pruned before or while it is checked: it is
 * reported apart ("pruned while verifying"), not as a fault, since what is gone cannot be wrong. A version that
 * cannot be read at all (a damaged page under it) is reported as unreadable, and the others are still checked. Last,
 * SQLite's own structure check covers what the hashes do not (free lists, pointer maps, index pages).
 * @module
 */
import { Option, type Command } from "commander";
import { join } from "node:path";
import { IavlError, isIavlError } from "../base/errors.js";
import { STORE_FILE } from "../sqlite/connection.js";
import { structureProblems } from "../sqlite/integrity.js";
import type { AuditReport } from "../tree/readonly-tree.js";
import { action } from "./command.js";
import { globals, out, outJson, versionArg, withProgress } from "./format.js";
import { pickVersion, withReader, type ReadHandle } from "./store.js";

interface VerifyCliOptions {
  version?: number;
  all?: boolean;
}

/** Adds the `verify` command to `program`. */
export function registerVerify(program: Command): void {
  program
    .command("verify")
    .description(
      "rehash every node of a version and check it against the stored root hash and key/value index (exit status 1 on any fault; " +
        "versions a live writer prunes meanwhile are listed apart, not as faults)",
    )
    .argument("<dir>", "store folder, or multi-store folder (every store, unless --store names some)")
    .option("--version <V>", "verify version V (default: the latest)", versionArg)
    .addOption(new Option("--all", "verify every kept version").conflicts("version"))
    .action(
      action({ folder: "each", takes: ["json", "store"], tail: (worst) => ({ ok: worst === 0 }) }, (dir: string, opts: VerifyCliOptions, cmd: Command) =>
        verify(dir, opts, cmd),
      ),
    );
}

/** A fault the audit records when the version it reads is pruned under it (audit.ts: "reading …: <code>: …"). */
const PRUNED_FAULT = /^reading [^:]*: VERSION_PRUNED: /;

async function verify(dir: string, opts: VerifyCliOptions, cmd: Command): Promise<number> {
  const g = globals(cmd);
  const { reports, pruned } = await withReader(dir, async (h) => {
    const versions = opts.all === true ? h.versions() : [pickVersion(h, opts.version)];
    const done: VersionReport[] = [];
    const gone: number[] = [];
    for (const v of versions) {
      const r = await reportOf(h, v);
      if (r === undefined) {
        // One version asked for by number must be checked: its loss is an error, not a skip.
        if (opts.all !== true) throw new IavlError("VERSION_PRUNED", `version ${v} was pruned while it was being verified`);
        gone.push(v);
        if (!g.json) out(`version ${v}: pruned while verifying (not checked)`);
        continue;
      }
      done.push(r);
      if (!g.json) printReport(r);
    }
    return { reports: done, pruned: gone };
  });
  const problems = structureProblems(join(dir, STORE_FILE));
  const bad = reports.filter((r) => !r.ok).length;
  const ok = bad === 0 && problems.length === 0;
  if (g.json) outJson({ ok, reports, pruned, structure: { ok: problems.length === 0, problems } });
  else {
    const skipped = pruned.length === 0 ? "" : `; ${pruned.length} pruned by the writer meanwhile, not checked (${span(pruned)})`;
    out(`SQLite structure check: ${problems.length === 0 ? "ok" : `${problems.length} problem(s)`}`);
    for (const p of problems) out(`  - ${p}`);
    const unreadable = reports.filter((r) => r.status === "unreadable").length;
    const structure = problems.length > 0 ? "; the file's structure is damaged" : "";
    if (bad === 0) out(`verified ${reports.length} version(s): all ok${structure}${skipped}`);
    else out(`FAULTS in ${bad} of ${reports.length} version(s)${unreadable > 0 ? ` (${unreadable} unreadable)` : ""}${structure}${skipped}`);
  }
  return ok ? 0 : 1;
}

/** A version's audit, and whether it was sound, had faults, or could not be read at all. */
interface VersionReport extends AuditReport {
  status: "sound" | "faulty" | "unreadable";
}

/**
 * The report of version `v` (undefined when it was pruned before or while it was read): a version that cannot be
 * read (a damaged page, say) is one unreadable report, and the next version is still checked.
 */
async function reportOf(h: ReadHandle, v: number): Promise<VersionReport | undefined> {
  try {
    const r = await auditOf(h, v);
    return r === undefined ? undefined : { ...r, status: r.ok ? "sound" : "faulty" };
  } catch (e) {
    if (!isIavlError(e)) throw e;
    return { ok: false, version: v, nodes: 0, leaves: 0, faults: [`unreadable: ${e.code}: ${e.message}`], status: "unreadable" };
  }
}

/** Audits version `v`; undefined when it was pruned before or while it was read (and only then). */
export async function auditOf(h: ReadHandle, v: number): Promise<AuditReport | undefined> {
  let r: AuditReport;
  try {
    const view = h.at(v);
    // Nodes of a tree of n keys: n leaves and n - 1 inner nodes.
    r = await withProgress(`verify v${v}`, Math.max(0, view.size * 2 - 1), (bar) => view.audit({ onProgress: (n) => bar.update(n) }));
  } catch (e) {
    if (isIavlError(e, "VERSION_PRUNED")) return undefined;
    throw e;
  }
  // A walk cut short by pruning is recorded as a fault; it is one only if the version is still kept.
  if (!r.ok && r.faults.every((f) => PRUNED_FAULT.test(f)) && !h.versions().includes(v)) return undefined;
  return r;
}

/** `a … b` for a sorted list of versions. */
function span(vs: number[]): string {
  return vs.length === 1 ? String(vs[0]) : `${vs[0]} … ${vs[vs.length - 1]}`;
}

/** Prints `r` as `verify` does: the version and its counts, each fault on a line of its own. */
export function printReport(r: AuditReport): void {
  if (r.ok) {
    out(`version ${r.version}: ok (${r.nodes} nodes, ${r.leaves} leaves)`);
    return;
  }
  out(`version ${r.version}: ${r.faults.length} fault(s) (${r.nodes} nodes, ${r.leaves} leaves)`);
  for (const f of r.faults) out(`  - ${f}`);
}
