/**
 * The commands that read and maintain one store folder, in the order `iavlite --help` lists them.
 * @module
 */
import { registerChanges } from "./changes.js";
import type { Registrar } from "./command.js";
import { registerGet } from "./get.js";
import { registerHistory } from "./history.js";
import { registerInfo } from "./info.js";
import { registerPrune } from "./prune.js";
import { registerRollback } from "./rollback.js";
import { registerVerify } from "./verify.js";

/** Reading a store first, then maintaining it. */
export const STORE_COMMANDS: readonly Registrar[] = [registerInfo, registerGet, registerChanges, registerHistory, registerVerify, registerPrune, registerRollback];
