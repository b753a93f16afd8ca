// ARCHITECTURE.md is the map a newcomer reads first: its file tables must name every file of src/ and nothing that
// is gone, and the files its prose names must exist, so that the map cannot drift from the tree again.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const repo = fileURLToPath(new URL("..", import.meta.url));
const doc = readFileSync(join(repo, "ARCHITECTURE.md"), "utf8");

/** Every file under `dir` (relative to the repository) whose name ends in .ts or .mjs. */
function sourceFiles(dir: string): string[] {
  return readdirSync(join(repo, dir), { withFileTypes: true }).flatMap((e) => {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) return sourceFiles(path);
    return /\.(ts|mjs)$/.test(e.name) ? [path] : [];
  });
}

/**
 * The files the tables of "## The files of `src/`" list: under each heading "### `src/<folder>`", the first cell of
 * each row, a backticked name relative to that folder.
 */
function listedFiles(): string[] {
  const section = doc.split(/^## /m).find((s) => s.startsWith("The files of `src/`"));
  if (section === undefined) throw new Error('ARCHITECTURE.md has no section "## The files of `src/`"');
  const listed: string[] = [];
  let folder: string | undefined;
  for (const line of section.split("\n")) {
    const heading = /^### `(src(?:\/[^`]+)?)`/.exec(line);
    if (heading) folder = heading[1];
    const row = /^\| `([^`]+)` \|/.exec(line);
    if (row && folder !== undefined) listed.push(`${folder}/${row[1]}`);
  }
  return listed;
}

const sources = sourceFiles("src").sort();
const listed = listedFiles();

describe("ARCHITECTURE.md", () => {
  it("lists every file of src/ in its tables", () => {
    expect(sources.filter((f) => !listed.includes(f))).toEqual([]);
  });

  it("lists no file that src/ does not hold, and none twice", () => {
    expect(listed.filter((f) => !sources.includes(f))).toEqual([]);
    expect(listed.filter((f, i) => listed.indexOf(f) !== i)).toEqual([]);
  });

  it("names only files that exist", () => {
    // A path that starts with a top folder is the repository's; any other (a bare name, `sqlite/rows.ts`) must end
    // the path of some source file.
    const top = /^(src|test|bench|sim|examples|explorer|scripts)\//;
    const files = ["src", "test", "bench", "sim", "examples"].flatMap(sourceFiles);
    const named = [...doc.matchAll(/`([\w./-]+\.(?:ts|mjs))`/g)].map((m) => m[1]!);
    const gone = named.filter((p) => (top.test(p) ? !existsSync(join(repo, p)) : !files.some((f) => f.endsWith(`/${p}`))));
    expect([...new Set(gone)]).toEqual([]);
  });
});
