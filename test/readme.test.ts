/**
 * The README runs as written. Each of its TypeScript blocks runs, in order, as a new user's script in one fresh
 * folder (a package of `"type": "module"`, importing `iavlite` and `@confio/ics23` as an application would), prints
 * exactly what its `// → ` comments say, and exits by itself: a tour that leaves a handle open or a thread running
 * never ends. Every command line the README shows names an `iavlite` command and options the CLI has, and every
 * `npm run` names a script of the package.
 */
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Command } from "commander";
import { describe, expect, it } from "vitest";
import { buildProgram } from "../src/cli/program.js";
import { tempDir } from "./backends.js";
import { root } from "./processes.js";

const readme = readFileSync(join(root, "README.md"), "utf8");

/** The fenced blocks of the README in the given languages, with the line each starts on. */
function blocks(...langs: string[]): Array<{ line: number; code: string }> {
  const found: Array<{ line: number; code: string }> = [];
  const re = /^```(\w*)\n([\s\S]*?)^```$/gm;
  for (let m = re.exec(readme); m !== null; m = re.exec(readme)) {
    if (langs.includes(m[1]!)) found.push({ line: readme.slice(0, m.index).split("\n").length, code: m[2]! });
  }
  return found;
}

/** What a block says it prints: each `// → text`, at a line's end or alone, in order. */
function expectedOutput(code: string): string[] {
  return [...code.matchAll(/\/\/ → (.*)$/gm)].map((m) => m[1]!.trimEnd());
}

const require = createRequire(import.meta.url);
/** How the user's imports resolve here: the package to its sources (run through tsx), the rest to this checkout's. */
const IMPORTS: Record<string, string> = {
  iavlite: pathToFileURL(join(root, "src/index.ts")).href,
  "iavlite/verify": pathToFileURL(join(root, "src/verify/index.ts")).href,
  "@confio/ics23": pathToFileURL(require.resolve("@confio/ics23")).href,
};

function runScript(dir: string, file: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = spawn(process.execPath, ["--import", pathToFileURL(require.resolve("tsx")).href, file], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  p.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  p.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => p.on("close", (code) => resolve({ code, stdout, stderr })));
}

describe("README", () => {
  const tsBlocks = blocks("ts");

  it("has TypeScript blocks whose every line of output is stated", () => {
    expect(tsBlocks.length).toBeGreaterThan(0);
    for (const b of tsBlocks) expect(expectedOutput(b.code).length, `the block at README.md:${b.line}`).toBeGreaterThan(0);
  });

  it("runs its TypeScript blocks as written, each printing what it says and exiting by itself", { timeout: 180_000 }, async () => {
    const dir = tempDir("iavlite-readme-");
    writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module", private: true }));
    for (const [i, b] of tsBlocks.entries()) {
      const code = b.code.replace(/from "([^"]+)"/g, (whole, spec: string) => (IMPORTS[spec] === undefined ? whole : `from "${IMPORTS[spec]}"`));
      const file = `block-${i + 1}.ts`;
      writeFileSync(join(dir, file), code);
      const r = await runScript(dir, file);
      const where = `the block at README.md:${b.line}: ${r.stderr}`;
      expect(r.code, where).toBe(0);
      expect(r.stdout.trimEnd().split("\n"), where).toEqual(expectedOutput(b.code));
    }
  });

  it("shows only iavlite commands and options that exist, and npm scripts the package has", () => {
    const program = buildProgram();
    const globals = program.options.map((o) => o.long);
    const scripts = Object.keys((JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts);
    let checked = 0;
    for (const b of blocks("sh")) {
      for (const raw of b.code.split("\n")) {
        const line = raw.replace(/\s#.*$/, "");
        const npm = /\bnpm run (\S+)/.exec(line);
        if (npm !== null) expect(scripts, `README.md: ${raw}`).toContain(npm[1]);
        const cli = /\biavlite (\w[\w-]*)(.*)$/.exec(line);
        if (cli === null || cli[1] === "serve.service") continue;
        const cmd: Command | undefined = program.commands.find((c) => c.name() === cli[1]);
        expect(cmd, `README.md: ${raw}`).toBeDefined();
        const known = new Set([...globals, ...cmd!.options.map((o) => o.long), "--help"]);
        for (const flag of cli[2]!.matchAll(/(?<![\w-])--[a-z][\w-]*/g)) expect(known.has(flag[0]), `${flag[0]} in README.md: ${raw}`).toBe(true);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(10);
  });
});
