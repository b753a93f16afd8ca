/**
 * The upgrade of a layout-2 store to pages (migration 006) against the other ways to the same store:
 *
 *   npx tsx bench/pages-upgrade.ts LAYOUT2_STORE_DIR [LAYOUT2_CLI]
 *
 * A layout-2 store can only be written, and exported as it is, by layout-2 code: a checkout before migration 004
 * (such as 58c8d4c), built with `npx tsc -p tsconfig.build.json`; LAYOUT2_CLI is its `dist/src/cli/main.js`. With
 * it, the baseline is what an operator would do instead of upgrading: `iavlite export` with that version, then
 * `iavlite import` with this one. Without it, only the export of the upgraded copy with this version, then the
 * import. Everything runs in child processes of this package compiled (as users run it), one after the other, each
 * on a fresh copy of the store given (never changed itself), after the copy's writes are flushed.
 * @module
 */
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildPackage } from "../test/built-package.js";

const [source, oldCli] = process.argv.slice(2);
if (source === undefined) throw new Error("usage: bench/pages-upgrade.ts LAYOUT2_STORE_DIR [LAYOUT2_CLI]");
const work = mkdtempSync(join(tmpdir(), "pages-upgrade-"));

/** Runs `node args…` to its end; returns its wall time in seconds and what it printed. */
function timed(args: string[]): { s: number; out: string } {
  const t0 = performance.now();
  const out = execFileSync(process.execPath, args, { encoding: "utf8", maxBuffer: 1 << 24 });
  return { s: (performance.now() - t0) / 1000, out };
}

/** A fresh copy of the store, its writes flushed. */
function copy(name: string): string {
  const dir = join(work, name);
  cpSync(source!, dir, { recursive: true });
  execFileSync("sync");
  return dir;
}

try {
  const cli = buildPackage(join(work, "package"));
  const index = join(work, "package", "dist", "src", "index.js");
  const script = (body: string): string[] => ["--input-type=module", "-e", `import { Tree, toHex } from ${JSON.stringify(index)};\n${body}`];

  const upgraded = copy("upgraded");
  const up = timed(script(`const t = Tree.open(${JSON.stringify(upgraded)}); console.log(t.version, toHex(t.hash)); t.close();`));
  const [version, hash] = up.out.trim().split(" ") as [string, string];
  console.log(`upgrade (open, close): ${up.s.toFixed(1)} s; version ${version}`);

  const ours = timed(
    script(`const src = Tree.openReadOnly(${JSON.stringify(upgraded)});
const t = await Tree.import(${JSON.stringify(join(work, "imported"))}, src.export(), { version: ${version}, expectedHash: src.hash });
if (toHex(t.hash) !== ${JSON.stringify(hash)}) throw new Error("the import's hash differs");
t.close(); src.close();`),
  );
  console.log(`export of the upgraded copy + import, in one process: ${ours.s.toFixed(1)} s; upgrade / that = ${(up.s / ours.s).toFixed(2)}×`);

  if (oldCli !== undefined) {
    const old = copy("old");
    const stream = join(work, "snapshot.bin");
    const exported = timed([oldCli, "export", old, "-o", stream]);
    const imported = timed([cli, "import", join(work, "imported-cli"), "--version", version, "--hash", hash, "-i", stream]);
    const both = exported.s + imported.s;
    console.log(`layout-2 export (${oldCli}) ${exported.s.toFixed(1)} s + import ${imported.s.toFixed(1)} s = ${both.toFixed(1)} s`);
    console.log(`upgrade / (export + import) = ${(up.s / both).toFixed(2)}× (target ≤ 1.5×)`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
