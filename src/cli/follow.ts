/**
 * `iavlite follow <url> <dir>`: a live replica of a source `iavlite serve` (src/replica), until SIGTERM, SIGINT or
 * SIGHUP; then it finishes or drops the versions in hand, closes the store and exits 0. One line per version committed
 * (`version N`, once it is durable), notes on stderr; a version whose hash differs from the source's, or a source
 * whose history is not the replica's, ends it with CORRUPT (exit 1); a URL that is not one ends it at once (exit 2).
 * @module
 */
import { InvalidArgumentError, type Command } from "commander";
import { isIavlError } from "../base/errors.js";
import { follow } from "../replica/follower.js";
import { checkSourceUrl } from "../replica/source.js";
import { action } from "./command.js";
import { intArg, note, out } from "./format.js";

interface FollowCliOptions {
  batch: number;
  waitMs: number;
  retryMs: number;
  maxRetryMs: number;
  keepRecent?: number;
}

/** The source's URL, or a usage error: one that could never answer is not retried. */
function urlArg(value: string): string {
  try {
    return checkSourceUrl(value);
  } catch (e) {
    if (isIavlError(e)) throw new InvalidArgumentError(e.message);
    throw e;
  }
}

/** Adds the `follow` command to `program`. */
export function registerFollow(program: Command): void {
  program
    .command("follow")
    .description("replicate a source `iavlite serve` into a folder: start from its snapshot, then replay and hash-check every version")
    .argument("<url>", "the source service, e.g. http://10.0.0.5:26680", urlArg)
    .argument("<dir>", "the replica's folder (missing or empty: it starts from the source's latest snapshot)")
    .option("--batch <n>", "versions asked for in one request", intArg(1, 1000), 32)
    .option("--wait-ms <ms>", "how long one request waits at the source for the next version", intArg(0, 60_000), 2_000)
    .option("--retry-ms <ms>", "first pause before asking again when the source fails or is away (each next one doubles)", intArg(10, 600_000), 500)
    .option("--max-retry-ms <ms>", "longest pause before asking a source away again", intArg(10, 3_600_000), 30_000)
    .option("--keep-recent <n>", "prune the replica's versions older than the last n", intArg(1))
    .addHelpText("after", "\nServe the replica with `iavlite serve <dir>` beside it: its answers are the source's, version by version.")
    .action(action({ folder: "none", takes: [] }, (url: string, dir: string, opts: FollowCliOptions) => followCmd(url, dir, opts)));
}

async function followCmd(url: string, dir: string, opts: FollowCliOptions): Promise<number> {
  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  for (const s of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.on(s, onSignal);
  try {
    note(`following ${url} into ${dir}`);
    const last = await follow(url, dir, {
      batch: opts.batch,
      waitMs: opts.waitMs,
      retryMs: opts.retryMs,
      maxRetryMs: opts.maxRetryMs,
      ...(opts.keepRecent === undefined ? {} : { keepRecent: opts.keepRecent }),
      onVersion: (v) => out(`version ${v}`),
      onNote: note,
      signal: stop.signal,
    });
    note(`stopped at version ${last}`);
    return 0;
  } finally {
    for (const s of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.off(s, onSignal);
  }
}
