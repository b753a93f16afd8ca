/**
 * `iavlite serve <dir>`: the read-only query service over a store or multi-store folder (src/serve), until SIGTERM or
 * SIGINT. It prints one line, `listening on http://HOST:PORT`, once it accepts connections; on a signal it stops
 * accepting, lets the requests in flight finish, closes the store and exits 0.
 * @module
 */
import { InvalidArgumentError, type Command } from "commander";
import { startServer } from "../serve/server.js";
import { intArg, out } from "./format.js";

interface ServeCliOptions {
  host: string;
  port: number;
  refreshMs: number;
}

/** A port number, 0 (any free port) to 65535. */
function portArg(value: string): number {
  const n = intArg(0)(value);
  if (n > 65535) throw new InvalidArgumentError(`expected a port number 0..65535, got "${value}".`);
  return n;
}

/** Adds the `serve` command to `program`; `stores` gives every `--store` given (a global option, repeatable here). */
export function registerServe(program: Command, stores: () => readonly string[]): void {
  program
    .command("serve")
    .description("serve values and proofs over HTTP (v1 JSON API, CometBFT abci_query, /metrics); read-only, beside the writer")
    .argument("<dir>", "store folder, or multi-store folder (as npm start makes)")
    .option("--host <host>", "address to listen on", "127.0.0.1")
    .option("--port <port>", "port to listen on (0: a free port)", portArg, 26680)
    .option("--refresh-ms <ms>", "how stale the latest version may get before a request looks for a newer one", intArg(0), 20)
    .addHelpText("after", "\nServe only some stores of a multi-store folder with --store NAME, repeated.")
    .action(async (dir: string, opts: ServeCliOptions) => {
      const given = stores();
      const service = await startServer(dir, {
        host: opts.host,
        port: opts.port,
        refreshMs: opts.refreshMs,
        ...(given.length === 0 ? {} : { stores: [...given] }),
      });
      // The handlers first: a client may signal as soon as it reads the line.
      const stopped = new Promise<void>((resolve, reject) => {
        const stop = (): void => {
          process.off("SIGTERM", stop);
          process.off("SIGINT", stop);
          service.close().then(resolve, reject);
        };
        process.on("SIGTERM", stop);
        process.on("SIGINT", stop);
      });
      out(`listening on ${service.url}`);
      await stopped;
    });
}
