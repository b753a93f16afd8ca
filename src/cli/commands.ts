/**
 * The table of `iavlite`'s commands: one registrar per command, in the order `iavlite --help` lists them.
 * @module
 */
import type { Command } from "commander";
import { registerBench } from "./bench.js";
import { registerChanges } from "./changes.js";
import { registerExport } from "./export.js";
import { registerGet } from "./get.js";
import { registerHistory } from "./history.js";
import { registerImport } from "./import.js";
import { registerInfo } from "./info.js";
import { registerPrune } from "./prune.js";
import { registerRollback } from "./rollback.js";
import { registerServe } from "./serve.js";
import { registerVerify } from "./verify.js";

/** Adds one command (its arguments, options, help and action) to the program. */
export type Registrar = (program: Command) => void;

/**
 * Every command, in the order of the help: reading a store first, then maintaining it, moving it, serving it, and
 * measuring this machine. A new command is added here, and only here.
 */
export const COMMANDS: readonly Registrar[] = [
  registerInfo,
  registerGet,
  registerChanges,
  registerHistory,
  registerVerify,
  registerPrune,
  registerRollback,
  registerExport,
  registerImport,
  registerServe,
  registerBench,
];
