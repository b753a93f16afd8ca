/**
 * `iavlite verify <dir>`: rehash every node of a version (or of all kept versions) and compare with the store.
 * @module
 */
import { Option, type Command } from "commander";
import type { AuditReport } from "../tree/audit.js";
import { action, globals, out, outJson, progress, versionArg } from "./format.js";
import { pickVersion, withReader } from "./store.js";

interface VerifyCliOptions {
  version?: number;
  all?: boolean;
}

/** Adds the `verify` command to `program`. */
export function registerVerify(program: Command): void {
  program
    .command("verify")
    .description("rehash every node of a version and check it against the stored root hash and key/value index (exit status 1 on any fault)")
    .argument("<dir>", "store folder")
    .option("--version <V>", "verify version V (default: the latest)", versionArg)
    .addOption(new Option("--all", "verify every kept version").conflicts("version"))
    .action(action((dir: string, opts: VerifyCliOptions, cmd: Command) => verify(dir, opts, cmd)));
}

async function verify(dir: string, opts: VerifyCliOptions, cmd: Command): Promise<number> {
  const g = globals(cmd);
  const reports = await withReader(dir, (h) => {
    const versions = opts.all === true ? h.versions() : [pickVersion(h, opts.version)];
    const done: AuditReport[] = [];
    for (const v of versions) {
      const view = h.at(v);
      // Nodes of a tree of n keys: n leaves and n - 1 inner nodes.
      const bar = progress(`verify v${v}`, Math.max(0, view.size * 2 - 1));
      try {
        done.push(view.audit({ onProgress: (n) => bar.update(n) }));
      } finally {
        bar.stop();
      }
      if (!g.json) printReport(done[done.length - 1]!);
    }
    return done;
  });
  const bad = reports.filter((r) => !r.ok).length;
  if (g.json) outJson({ ok: bad === 0, reports });
  else out(bad === 0 ? `verified ${reports.length} version(s): all ok` : `FAULTS in ${bad} of ${reports.length} version(s)`);
  return bad === 0 ? 0 : 1;
}

function printReport(r: AuditReport): void {
  if (r.ok) {
    out(`version ${r.version}: ok (${r.nodes} nodes, ${r.leaves} leaves)`);
    return;
  }
  out(`version ${r.version}: ${r.faults.length} fault(s) (${r.nodes} nodes, ${r.leaves} leaves)`);
  for (const f of r.faults) out(`  - ${f}`);
}
