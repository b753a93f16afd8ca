/**
 * Once per run: the package built into a temporary folder (test/built-package.ts), handed to the test files as
 * `inject("built")` (test/setup-env.ts puts it in `IAVLITE_BUILT` for sim/child-command.ts) and its CLI entry as
 * `inject("cli")`, and the folder removed after the run.
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { buildPackage } from "./built-package.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The folder of the package built for this run. */
    built: string;
    /** The built CLI's entry (dist/src/cli/main.js of that package). */
    cli: string;
  }
}

export default function setup(project: TestProject): () => void {
  const root = mkdtempSync(join(tmpdir(), "iavlite-built-"));
  project.provide("cli", buildPackage(root));
  project.provide("built", root);
  return () => rmSync(root, { recursive: true, force: true });
}
