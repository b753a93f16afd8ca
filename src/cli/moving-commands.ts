/**
 * The commands that move a store's state elsewhere or serve it, in the order `iavlite --help` lists them.
 * @module
 */
import type { Registrar } from "./command.js";
import { registerExport } from "./export.js";
import { registerFollow } from "./follow.js";
import { registerImport } from "./import.js";
import { registerServe } from "./serve.js";

/** A snapshot out and in, then the service and its replicas. */
export const MOVING_COMMANDS: readonly Registrar[] = [registerExport, registerImport, registerServe, registerFollow];
