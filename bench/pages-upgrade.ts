/**
 * The upgrade of a layout-2 store to pages (migration 006) against the other way to the same store: an export of its
 * latest version imported into a new one (`npx tsx bench/pages-upgrade.ts STORE_DIR`). A layout-2 store can only be
 * written by layout-2 code (a checkout before migration 004, such as 58c8d4c); the store given is copied, never
 * changed. Both runs go in this process one after the other, the upgrade first and then the export + import, and the
 * export reads the upgraded copy (reading a layout-2 store at all upgrades it first).
 * @module
 */
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { toHex, Tree } from "../src/index.js";
import { bytesOf } from "./timing.js";

const source = process.argv[2];
if (source === undefined) throw new Error("usage: bench/pages-upgrade.ts LAYOUT2_STORE_DIR");
const work = mkdtempSync(join(tmpdir(), "pages-upgrade-"));
try {
  const dir = join(work, "upgraded");
  cpSync(source, dir, { recursive: true });
  // The copy's writes flushed first, so that the disk is as quiet for the upgrade as for the export + import after it.
  execFileSync("sync");
  const rows = (sql: string): number => {
    const db = new Database(join(dir, "iavl.sqlite"), { readonly: true });
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'branch\\_%' ESCAPE '\\'").pluck().all() as string[];
    const n = tables.reduce((s, t) => s + (db.prepare(sql.replace("$T", t)).pluck().get() as number), 0);
    db.close();
    return n;
  };
  console.log(`layout 2: ${rows("SELECT count(*) FROM $T")} branch rows, ${rows("SELECT count(*) FROM $T WHERE size <= 16")} of them of at most 16 leaves; ${(bytesOf(dir) / 2 ** 20).toFixed(0)} MiB`);
  let t0 = performance.now();
  const tree = Tree.open(dir);
  const upgrade = performance.now() - t0;
  const version = tree.version;
  const hash = toHex(tree.hash);
  tree.close();
  console.log(`upgrade: ${(upgrade / 1000).toFixed(1)} s; ${rows("SELECT count(*) FROM $T")} branch rows left; ${(bytesOf(dir) / 2 ** 20).toFixed(0)} MiB`);

  const source2 = Tree.openReadOnly(dir);
  t0 = performance.now();
  const imported = await Tree.import(join(work, "imported"), source2.at(version).export(), { version, expectedHash: source2.hash });
  const exportImport = performance.now() - t0;
  execFileSync("sync");
  const same = toHex(imported.hash) === hash;
  imported.close();
  source2.close();
  console.log(`export + import of version ${version}: ${(exportImport / 1000).toFixed(1)} s (hash ${same ? "equal" : "DIFFERENT"})`);
  console.log(`upgrade / (export + import) = ${(upgrade / exportImport).toFixed(2)}× (target ≤ 1.5×)`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
