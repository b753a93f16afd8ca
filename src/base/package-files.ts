/**
 * Files shipped beside the code (the migrations, the explorer page), found the same way whether the code runs from
 * `src/` (tsx, the tests) or from `dist/src/` (an installed package).
 * @module
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The absolute path of `path` in the package that holds module `moduleUrl`: the nearest folder above the module with
 * a package.json and `path` in it. Throws naming `what` when the installation lacks it.
 */
export function packageFile(moduleUrl: string, path: string, what: string): string {
  let dir = dirname(fileURLToPath(moduleUrl));
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, path);
    if (existsSync(join(dir, "package.json")) && existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  throw new Error(`iavlite: ${what} is missing from the installation`);
}
