/**
 * `iavlite serve <dir>`: the read-only query service (src/serve) until SIGTERM, SIGINT, SIGHUP or the parent process
 * goes away; then it lets the requests in flight finish, closes the store and exits 0. Its flags are checked against
 * the service's option schema, so that a bad one is a usage error (exit 2), not the library's INVALID_OPTIONS.
 * @module
 */
import { InvalidArgumentError, type Command } from "commander";
import { startServer } from "../serve/server.js";
import { corsOriginSchema, serveOptionsSchema } from "../serve/serve-options.js";
import { action, folderOf } from "./command.js";
import { intArgOf, out, UsageError } from "./format.js";

interface ServeCliOptions {
  host: string;
  port: number;
  refreshMs: number;
  stallTimeoutMs: number;
  maxStreams: number;
  corsOrigin?: string[];
}

/** How often the service looks whether its parent process is still there, ms. */
const PARENT_POLL_MS = 1000;

/** Adds the `serve` command to `program`. */
export function registerServe(program: Command): void {
  const o = serveOptionsSchema.shape;
  program
    .command("serve")
    .description("serve values and proofs over HTTP (v1 JSON API, CometBFT abci_query, /metrics); read-only, beside the writer")
    .argument("<dir>", "store folder, or multi-store folder (as npm start makes; every store, unless --store names some)")
    .option("--host <host>", "address to listen on", hostArg, "127.0.0.1")
    .option("--port <port>", "port to listen on (0: a free port)", intArgOf(o.port), 26680)
    .option("--refresh-ms <ms>", "how stale the latest version may get before a request looks for a newer one", intArgOf(o.refreshMs), 20)
    .option("--stall-timeout-ms <ms>", "close a connection whose client has not taken any of its answer's bytes for this long", intArgOf(o.stallTimeoutMs), 30_000)
    .option("--max-streams <n>", "most /v1/ops, /v1/snapshot and /v1/changes streams at once; past it, 503 with Retry-After", intArgOf(o.maxStreams), 64)
    .option("--cors-origin <origin>", "let browser pages of this origin (https://app.example:8443, or * for any) read the answers; repeatable", corsOriginArg)
    .addHelpText("after", "\nServe only some stores of a multi-store folder with --store NAME, repeated. --json is refused: serve prints one line, `listening on URL`.")
    .action(action({ folder: "none", takes: ["store"] }, (dir: string, opts: ServeCliOptions, cmd: Command) => serve(dir, opts, cmd)));
}

/** One more `--cors-origin`, checked as the service's option schema checks it. */
function corsOriginArg(value: string, previous: string[] | undefined): string[] {
  const r = corsOriginSchema.safeParse(value);
  if (!r.success) throw new InvalidArgumentError(`is not an origin (${r.error.issues[0]?.message ?? "see --help"}), got "${value}"`);
  return [...(previous ?? []), value];
}

/** A host to listen on: anything but empty (the OS judges the address when the service listens). */
function hostArg(value: string): string {
  if (value.trim() === "") throw new UsageError("--host must not be empty");
  return value;
}

async function serve(dir: string, opts: ServeCliOptions, cmd: Command): Promise<number> {
  // Store names the folder lacks are usage errors here, as for every command.
  const folder = folderOf(dir, cmd);
  const stores = folder?.narrowed === true ? folder.chosen : undefined;
  const service = await startServer(dir, {
    host: opts.host,
    port: opts.port,
    refreshMs: opts.refreshMs,
    stallTimeoutMs: opts.stallTimeoutMs,
    maxStreams: opts.maxStreams,
    corsOrigins: opts.corsOrigin ?? [],
    ...(stores === undefined ? {} : { stores }),
  });
  // The handlers first: a client may signal as soon as it reads the line. A parent that dies without passing on its
  // signal (`npx`, a script killed with SIGKILL) would leave the port held with nobody to stop it: watch it too.
  const stopped = new Promise<void>((resolve, reject) => {
    const parent = process.ppid;
    const orphaned = setInterval(() => {
      if (!alive(parent)) stop();
    }, PARENT_POLL_MS).unref();
    const stop = (): void => {
      clearInterval(orphaned);
      process.off("SIGTERM", stop);
      process.off("SIGINT", stop);
      process.off("SIGHUP", stop);
      service.close().then(resolve, reject);
    };
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
    // The terminal that ran it closed: as SIGTERM (Node's default for SIGHUP would end it without draining).
    process.on("SIGHUP", stop);
  });
  out(`listening on ${service.url}`);
  await stopped;
  return 0;
}

/** True while process `pid` exists (signal 0 only checks; EPERM means it exists under another user). */
function alive(pid: number): boolean {
  // Re-parented to init (or a subreaper): the parent that started us is gone.
  if (process.ppid !== pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}
