// Issue 23: no module of src/ imports more than 12 others, so that each can be read with what it stands on in view.
// A module over the bound does several jobs and is split by job (never by a barrel that only re-exports).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const repo = fileURLToPath(new URL("..", import.meta.url));

/** The most distinct modules one module of src/ may import or re-export from. */
const MAX_IMPORTS = 12;

/**
 * Exempt: the package entry, whose job is to list the public API, one export line per module that holds a part of
 * it; it does nothing else, and what it names is public.
 */
const EXEMPT = new Set(["src/index.ts"]);

/** Every module under `dir` (relative to the repository): .ts and .mjs files. */
function modules(dir: string): string[] {
  return readdirSync(join(repo, dir), { withFileTypes: true }).flatMap((e) => {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) return modules(path);
    return /\.(ts|mjs)$/.test(e.name) ? [path] : [];
  });
}

/**
 * The distinct module specifiers `file` imports or re-exports from (`import … from "x"`, `export … from "x"`,
 * `import "x"`), Node builtins and packages included, as `grep -oE '(from|import) "[^"]+"'` counts them.
 */
function specifiers(file: string): Set<string> {
  const text = readFileSync(join(repo, file), "utf8");
  return new Set([...text.matchAll(/(?:from|import) "([^"]+)"/g)].map((m) => m[1]!));
}

describe("imports", () => {
  it(`no module of src/ (but the package entry) imports more than ${MAX_IMPORTS} others`, () => {
    const over = modules("src")
      .filter((f) => !EXEMPT.has(f))
      .map((f) => ({ file: f, count: specifiers(f).size }))
      .filter((m) => m.count > MAX_IMPORTS)
      .sort((a, b) => b.count - a.count || a.file.localeCompare(b.file))
      .map((m) => `${m.file} imports ${m.count} modules`);
    expect(over, `modules importing more than ${MAX_IMPORTS} others:\n${over.join("\n")}`).toEqual([]);
  });
});
