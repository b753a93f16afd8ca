/**
 * The table of `iavlite`'s commands: one registrar per command, in the order `iavlite --help` lists them.
 * @module
 */
import { registerBench } from "./bench.js";
import { registerChanges } from "./changes.js";
import { registerExport } from "./export.js";
import { registerGet } from "./get.js";
import { registerHistory } from "./history.js";
import { registerImport } from "./import.js";
import { registerInfo } from "./info.js";
import { registerPrune } from "./prune.js";
import { registerReplicate, registerRestore } from "./replicas.js";
import { registerRollback } from "./rollback.js";
import { registerServe } from "./serve.js";
import { registerVerify } from "./verify.js";

/**
 * Adds one command (its arguments, options, help and action) to the program: `(program: Command) => void`, as every
 * registrar is (named through one of them, so that this table imports nothing but the commands).
 */
export type Registrar = typeof registerInfo;

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
  registerReplicate,
  registerRestore,
  registerServe,
  registerBench,
];
