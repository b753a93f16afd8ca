/**
 * The `iavlite` command line: the program, its global options, and how errors become one line and an exit status.
 *
 * Exit status: 0 success; 1 a fault, a refusal or a failure (`iavlite: <code>: <message>` on stderr for library
 * errors); 2 a bad command line (one line on stderr). With `--json`, a failure also writes `{"error":{code,message}}`
 * on stdout when the command wrote nothing there yet (code `USAGE` for a bad command line).
 * @module
 */
import { Command, CommanderError, Option } from "commander";
import { isIavlError } from "../base/errors.js";
import { jsonRequested, lastStatus, outJsonError, UsageError } from "./format.js";
import { registerBench } from "./bench.js";
import { registerChanges } from "./changes.js";
import { registerExport } from "./export.js";
import { registerGet } from "./get.js";
import { registerImport } from "./import.js";
import { registerInfo } from "./info.js";
import { registerPrune } from "./prune.js";
import { registerRollback } from "./rollback.js";
import { registerServe } from "./serve.js";
import { registerVerify } from "./verify.js";

const EXAMPLES = `
Keys and values:
  Keys are read as UTF-8, or as hex with --hex. Output shows bytes as UTF-8 when they are valid UTF-8 without
  control characters, else as 0x-prefixed hex; --hex always prints plain hex, --utf8 always prints UTF-8.
  With --json each byte string comes with its encoding ("utf8" or "hex").

Exit status: 0 ok, 1 fault or failure, 2 bad command line.

Examples:
  $ iavlite info ./data                       # every store of a multi-store folder
  $ iavlite get ./data --store bank 0a0b --hex --prove
  $ iavlite get ./data balance/alice --version 42 --prove
  $ iavlite get ./data --hex 0a0b0c --json
  $ iavlite changes ./data --store bank --from 40 --to 42 --json --hex
  $ iavlite verify ./data --all
  $ iavlite prune ./data --keep-recent 100
  $ iavlite rollback ./data --to 40            # shows what would be deleted
  $ iavlite rollback ./data --to 40 --yes
  $ iavlite export ./data --version 42 -o v42.snap
  $ iavlite import ./copy --version 42 --hash <root hex> -i v42.snap
  $ iavlite export ./data | iavlite import ./copy --version 42
  $ iavlite serve ./data --port 26680          # HTTP queries with proofs, CometBFT abci_query, /metrics
  $ iavlite bench --versions 100              # this machine against a plain SQLite table
`;

/** Builds the program. Errors are thrown (exitOverride), never turned into `process.exit` by commander. */
export function buildProgram(): Command {
  const program = new Command("iavlite");
  // Every --store given: one for most commands (the last counts), several for serve.
  const stores: string[] = [];
  program
    .description("inspect and maintain iavlite stores (versioned IAVL Merkle trees in SQLite, hash-exact with cosmos/iavl)")
    .addOption(new Option("--json", "machine-readable output"))
    .addOption(new Option("--hex", "read keys as hex and print bytes as hex").conflicts("utf8"))
    .addOption(new Option("--utf8", "print bytes as UTF-8 even when not printable"))
    .addOption(
      new Option("--store <name>", "in a multi-store folder (as npm start makes), the store to use (serve: repeat for several)")
        .argParser((name: string) => (stores.push(name), name)),
    )
    .configureHelp({ showGlobalOptions: true })
    .showSuggestionAfterError(true)
    // Inherited by the subcommands added below: commander throws instead of exiting, and reporting is ours.
    .exitOverride()
    .configureOutput({ outputError: () => undefined })
    .addHelpText("after", EXAMPLES);
  registerInfo(program);
  registerGet(program);
  registerChanges(program);
  registerVerify(program);
  registerPrune(program);
  registerRollback(program);
  registerExport(program);
  registerImport(program);
  registerServe(program, () => stores);
  registerBench(program);
  return program;
}

/** Runs the CLI on `argv` (user arguments only, without node and the script); resolves to the exit status. */
export async function run(argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv, { from: "user" });
    return lastStatus();
  } catch (e) {
    const r = report(e);
    // With --json, stdout holds one JSON value also on failure (a bad command line is found before any action ran).
    const end = argv.indexOf("--");
    const json = jsonRequested() || (end === -1 ? argv : argv.slice(0, end)).includes("--json");
    if (r.status !== 0 && r.code !== undefined && json) outJsonError(r.code, r.message);
    return r.status;
  }
}

/** Prints `e` as one line on stderr; gives the exit status it means, and its code and message for JSON. */
function report(e: unknown): { status: number; code?: string; message: string } {
  if (e instanceof CommanderError) {
    // Help and version output are not errors; `iavlite` alone prints the help to stderr and counts as misuse.
    if (e.exitCode === 0) return { status: 0, message: "" };
    if (e.code === "commander.help" || e.code === "commander.helpDisplayed") return { status: 2, message: "" };
    const message = e.message.replace(/^error: /, "");
    error(message);
    return { status: 2, code: "USAGE", message };
  }
  if (e instanceof UsageError) {
    error(e.message);
    return { status: 2, code: "USAGE", message: e.message };
  }
  if (isIavlError(e)) {
    error(`${e.code}: ${e.message}`);
    return { status: 1, code: e.code, message: e.message };
  }
  const sys = e as NodeJS.ErrnoException;
  if (e instanceof Error && typeof sys.code === "string") {
    // A system error (a missing input file, a closed pipe) or SQLite's: expected enough not to need a stack.
    error(e.message.startsWith(sys.code) ? e.message : `${sys.code}: ${e.message}`);
    return { status: 1, code: sys.code, message: e.message };
  }
  const message = e instanceof Error ? e.message : String(e);
  error(`internal error: ${message}${process.env["IAVLITE_DEBUG"] ? "" : " (IAVLITE_DEBUG=1 shows the stack)"}`);
  if (process.env["IAVLITE_DEBUG"] && e instanceof Error && e.stack !== undefined) process.stderr.write(e.stack + "\n");
  return { status: 1, code: "INTERNAL", message };
}

function error(message: string): void {
  process.stderr.write(`iavlite: ${message.replace(/\s*\n\s*/g, " ").trim()}\n`);
}
