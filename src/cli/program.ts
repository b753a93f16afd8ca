/**
 * The `iavlite` command line: the program, its global options (its help states the exit statuses), and how an error
 * becomes one line on stderr, an exit status and, with `--json`, `{"error":{code,message}}` on stdout when the
 * command wrote nothing there yet (code `USAGE` for a bad command line).
 * @module
 */
import { readFileSync } from "node:fs";
import { Command, CommanderError, Option } from "commander";
import { fromSqlite, isIavlError } from "../base/errors.js";
import { packageFile } from "../base/package-files.js";
import { jsonRequested, lastStatus } from "./command.js";
import { outJsonError, UsageError } from "./format.js";
import { COMMANDS } from "./commands.js";

const EXAMPLES = `
Keys and values:
  Keys are read as UTF-8, or as hex with --hex. Output shows bytes as UTF-8 when they are valid UTF-8 without
  control characters, else as 0x-prefixed hex; --hex always prints plain hex, --utf8 always prints UTF-8.
  With --json each byte string comes with its encoding ("utf8" or "hex").

Multi-store folders (as npm start makes: ./data with stores/bank, stores/lockup, stores/staking and a commit marker):
  Every command works on every store unless --store NAME (repeatable) narrows it. get looks the key up in each
  store; prune prunes them all to one version; rollback rolls them all and the commit marker back together and
  refuses --store; export writes one store's stream, so it needs one --store. With --json, stdout holds one value
  naming each store: {"stores":[{"name":"bank",...},...]} beside the folder's fields (info: version, appHash);
  changes and history --json print one object per line, each with its "store".

Version: iavlite --version (or -V) prints it.

Exit status: 0 ok; 1 the store refused or failed (iavlite: CODE: message; a version not kept, a fault, a lock held
  by a writer); 2 a bad command line (a flag or value, a store the folder lacks, --to before --from, an option the
  command does not take). rollback without --yes and get of an absent key exit 1.

Examples (on ./data as one npm start leaves it: versions 201 … 300; <key> is a key's hex, <root hex> a root hash):
  $ iavlite info ./data                                  # every store, and the app hash
  $ iavlite info ./data --store bank --json
  $ iavlite get ./data --hex <key>                        # the key in every store
  $ iavlite get ./data --store bank --hex <key> --version 290 --prove
  $ iavlite changes ./data --store bank --from 281 --to 290 --json --hex
  $ iavlite history ./data --store bank --hex <key> --limit 10   # the versions where the key changed, newest first
  $ iavlite verify ./data --all
  $ iavlite prune ./data --keep-recent 50                 # every store to the same version
  $ iavlite rollback ./data --to 290                      # shows what would be deleted, exit 1
  $ iavlite rollback ./data --to 290 --yes
  $ iavlite export ./data --store bank --version 290 -o bank-290.snap
  $ iavlite import ./bank-copy --version 290 --hash <root hex> -i bank-290.snap
  $ iavlite export ./data --store staking --version 290 | iavlite import ./staking-copy --version 290
  $ iavlite replicate ./data --to ./backup --config-only  # the Litestream config: each SQLite file under ./backup
  $ iavlite replicate ./data --to ./backup               # Litestream, until Ctrl-C (writer: walCheckpoints "external")
  $ iavlite restore ./backup ./restored                   # a new folder at a version whole in every store, verified
  $ iavlite restore ./backup ./restored-280 --version 280 # or --timestamp 2025-01-31T12:00:00Z; s3://… takes --store
  $ iavlite serve ./data --port 26680                     # HTTP queries with proofs, CometBFT abci_query, /metrics
  $ iavlite bench --versions 20 --changes 500             # this machine against a plain SQLite table
`;

/** Builds the program. Errors are thrown (exitOverride), never turned into `process.exit` by commander. */
export function buildProgram(): Command {
  const program = new Command("iavlite");
  program
    .description("inspect and maintain iavlite stores (versioned IAVL Merkle trees in SQLite, hash-exact with cosmos/iavl)")
    .addOption(new Option("--json", "machine-readable output"))
    .addOption(new Option("--hex", "read keys as hex and print bytes as hex").conflicts("utf8"))
    .addOption(new Option("--utf8", "print bytes as UTF-8 even when not printable"))
    .addOption(
      // Repeatable: every name given, in order.
      new Option("--store <name>", "in a multi-store folder (as npm start makes), work on this store only; repeat for several (default: every store)")
        .argParser((name: string, previous: string[] | undefined) => [...(previous ?? []), name]),
    )
    .configureHelp({ showGlobalOptions: true })
    .showSuggestionAfterError(true)
    // Inherited by the subcommands added below: commander throws instead of exiting, and reporting is ours.
    .exitOverride()
    .configureOutput({ outputError: () => undefined })
    .addHelpText("after", EXAMPLES);
  for (const register of COMMANDS) register(program);
  return program;
}

/** Runs the CLI on `argv` (user arguments only, without node and the script); resolves to the exit status. */
export async function run(argv: string[]): Promise<number> {
  // Not commander's .version(): it would take `get … --version 42` (a subcommand's own option) for it.
  if (argv.length === 1 && (argv[0] === "--version" || argv[0] === "-V")) {
    process.stdout.write(`${packageVersion()}\n`);
    return 0;
  }
  try {
    await buildProgram().parseAsync(argv, { from: "user" });
    return lastStatus();
  } catch (e) {
    // SQLite's failures in the library's words (a command's own steps map theirs; this catches the rest).
    const r = report(fromSqlite(e, `iavlite ${argv[0] ?? ""}`));
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
    const message = commanderMessage(e);
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

/** Commander's message; a bad value's becomes `--refresh-ms must be …` (or `<url>: …`), as the other usage errors read (see format.ts's parsers). */
function commanderMessage(e: CommanderError): string {
  const m = e.message.replace(/^error: /, "");
  const bad = m.match(/^option '(?:-\w, )?(--[\w-]+)[^']*' argument '.*' is invalid\. (.*)$/s);
  if (bad !== null) return `${bad[1]} ${bad[2]}`;
  // An argument's parser names the value itself (follow's <url>).
  const arg = m.match(/^command-argument value '.*' is invalid for argument '([\w-]+)'\. (.*)$/s);
  return arg === null ? m : `<${arg[1]}>: ${arg[2]}`;
}

/** The version in the package's package.json (the same from src/ under tsx and from dist/ installed). */
function packageVersion(): string {
  const pkg: unknown = JSON.parse(readFileSync(packageFile(import.meta.url, "package.json", "package.json"), "utf8"));
  const version = typeof pkg === "object" && pkg !== null && "version" in pkg ? pkg.version : undefined;
  return typeof version === "string" ? version : "unknown";
}

function error(message: string): void {
  process.stderr.write(`iavlite: ${message.replace(/\s*\n\s*/g, " ").trim()}\n`);
}
