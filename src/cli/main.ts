#!/usr/bin/env node
/**
 * Entry point of the `iavlite` command (see program.ts for the commands and exit statuses).
 * @module
 */
import { run } from "./program.js";

// A reader that goes away (`iavlite export … | head`) is not an error worth a stack trace.
process.stdout.on("error", (e: NodeJS.ErrnoException) => {
  if (e.code === "EPIPE") process.exit(process.exitCode ?? 1);
});

// The exit status is set rather than forced with process.exit, so that piped output is flushed first.
process.exitCode = await run(process.argv.slice(2));
