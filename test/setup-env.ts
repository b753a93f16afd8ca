/**
 * Before each test file: child scripts start from the package built for the run (sim/child-command.ts reads it).
 * @module
 */
import { inject } from "vitest";

process.env["IAVLITE_BUILT"] = inject("built");
