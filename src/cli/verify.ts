/**
 * `iavlite verify <dir>`: rehash every node of a version (or of all kept versions) and compare with the store.
 *
 * Beside a live writer that prunes, a version listed at the start may be pruned before or while it is checked: it is
 * reported apart ("pruned while verifying"), not as a fault, since what is gone cannot be wrong.
 * @module
 */
import { Option, type Command } from "commander";
import { IavlError, isIavlError } from "../base/errors.js";
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
    const done: AuditReport[] = [];
    const gone: number[] = [];
    for (const v of versions) {
      const r = await auditOf(h, v);
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
  const bad = reports.filter((r) => !r.ok).length;
  if (g.json) outJson({ ok: bad === 0, reports, pruned });
  else {
    const skipped = pruned.length === 0 ? "" : `; ${pruned.length} pruned by the writer meanwhile, not checked (${span(pruned)})`;
    out(bad === 0 ? `verified ${reports.length} version(s): all ok${skipped}` : `FAULTS in ${bad} of ${reports.length} version(s)${skipped}`);
  }
  return bad === 0 ? 0 : 1;
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
