/**
 * The table of `iavlite`'s commands, in the order `iavlite --help` lists them: reading and maintaining a store
 * (store-commands.ts), moving and serving it (moving-commands.ts), and measuring this machine.
 * @module
 */
import { registerBench } from "./bench.js";
import type { Registrar } from "./command.js";
import { MOVING_COMMANDS } from "./moving-commands.js";
import { STORE_COMMANDS } from "./store-commands.js";

/** Every command. A new command is added to one of the groups, and only there. */
export const COMMANDS: readonly Registrar[] = [...STORE_COMMANDS, ...MOVING_COMMANDS, registerBench];
