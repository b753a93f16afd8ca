/**
 * How the simulator and the tests start a script of this repository in a child process: its compiled copy in the
 * package built for the test run (`IAVLITE_BUILT`, set by test/setup-env.ts; test/built-package.ts compiles src,
 * sim, test and bench there), which node starts in a third of the time, or the TypeScript through tsx when there is
 * none (`npm run simulate`, a script run by hand).
 * @module
 */
import { existsSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("..", import.meta.url));

/** node's arguments that run `file` (a path in this repository; anything else is run as it is). */
export function scriptArgs(file: string): string[] {
  if (!file.endsWith(".ts")) return [file];
  const built = process.env["IAVLITE_BUILT"];
  const rel = relative(repo, file);
  if (built !== undefined && built !== "" && !rel.startsWith("..")) {
    const compiled = join(built, "dist", rel.replace(/\.ts$/, ".js"));
    if (existsSync(compiled)) return [compiled];
  }
  return ["--import", "tsx", file];
}

/** node's arguments that run the `iavlite` CLI, before the command's own. */
export function cliCommand(): string[] {
  return scriptArgs(join(repo, "src/cli/main.ts"));
}
