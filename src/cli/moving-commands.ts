/**
 * The commands that move a store's state elsewhere or serve it, in the order `iavlite --help` lists them.
 * @module
 */
import type { Registrar } from "./command.js";
import { registerExport } from "./export.js";
import { registerFollow } from "./follow.js";
import { registerImport } from "./import.js";
import { registerReplicate, registerRestore } from "./replicas.js";
import { registerServe } from "./serve.js";

/** A snapshot out and in, the folder streamed to a replica (Litestream) and back, then the service and its live replicas. */
export const MOVING_COMMANDS: readonly Registrar[] = [registerExport, registerImport, registerReplicate, registerRestore, registerServe, registerFollow];
