/**
 * A live replica of a source `iavlite serve`: it starts from the source's snapshot (or from where it last
 * committed), then replays every version's operations in their original order and commits a version only when each
 * store's root hash (and the app hash) equals the source's. A mismatch stops it with `CORRUPT` at its last good
 * version; a version the source no longer holds the operations of makes it start again from a snapshot; a source
 * that goes away is waited for.
 * @module
 */
import { existsSync, readdirSync } from "node:fs";
import { z } from "zod";
import { IavlError, isIavlError } from "../base/errors.js";
import { parseOptions } from "../base/options.js";
import { bootstrap } from "./bootstrap.js";
import { Feed } from "./feed.js";
import { LocalReplica, type ReplicaStoreOptions } from "./local-replica.js";
import { Source, type SourceStatus } from "./source.js";

const fn = <T>() => z.custom<T>((v) => typeof v === "function", "must be a function");

const followOptionsSchema = z
  .object({
    /** Versions asked for in one request. Default 32. */
    batch: z.number().int().min(1).max(1000).default(32),
    /** How long one request waits at the source for a version not committed yet, ms. Default 2000. */
    waitMs: z.number().int().min(0).max(60_000).default(2_000),
    /** The pause before asking again after the source failed or could not be reached, ms. Default 500. */
    retryMs: z.number().int().min(10).max(600_000).default(500),
    /** Pruning of the replica's own stores (it may keep fewer or more versions than the source). */
    keepRecent: z.number().int().min(1).optional(),
    keepEvery: z.number().int().min(1).optional(),
    memoryBudgetMiB: z.number().int().min(8).max(1_048_576).optional(),
    /** Called after each version committed here. */
    onVersion: fn<(version: number) => void>().optional(),
    /** Called with what the replica did besides following: a snapshot taken, a source that went away. */
    onNote: fn<(message: string) => void>().optional(),
    /** Stops the replica: {@link follow} then returns once its current version is committed or dropped. */
    signal: z.custom<AbortSignal>((v) => v instanceof AbortSignal, "must be an AbortSignal").optional(),
  })
  .strict();

/** Options of {@link follow}. */
export type FollowOptions = z.input<typeof followOptionsSchema>;

/**
 * Follows the service at `url` into the folder `dir` until `options.signal` aborts; returns the last version
 * committed here. Throws `CORRUPT` when a version's hash differs from the source's, and what the folder's store
 * throws (`LOCKED` when another writer holds it).
 */
export async function follow(url: string, dir: string, options: FollowOptions = {}): Promise<number> {
  const o = parseOptions(followOptionsSchema, options);
  const signal = o.signal ?? new AbortController().signal;
  const note = o.onNote ?? (() => undefined);
  const source = new Source(url, signal);
  const storeOptions: ReplicaStoreOptions = { keepRecent: o.keepRecent, keepEvery: o.keepEvery, memoryBudgetMiB: o.memoryBudgetMiB };
  const pause = (): Promise<void> => new Promise((r) => setTimeout(r, o.retryMs));

  let status: SourceStatus | undefined;
  let local: LocalReplica | undefined;
  let stores: string[] | undefined;
  // Whether this replica's last version was found equal to the source's since it opened.
  let checked = false;
  // Whether the source no longer holds the operations after this replica's last version.
  let stale = false;
  try {
    while (!signal.aborted) {
      try {
        if (status === undefined) {
          status = await source.status();
          stores = status.appHash === null ? undefined : status.stores.map((s) => s.name);
        }
        if (local === undefined) {
          if ((stale || isEmpty(dir)) && status.latest > 0) {
            note(`starting from the source's snapshot of version ${status.latest}`);
            await bootstrap(source, dir, status.latest, stores, storeOptions);
            stale = false;
          }
          local = LocalReplica.open(dir, stores, storeOptions);
          checked = local.version === 0;
        }
        await step(url, source, local, stores ?? [status.stores[0]!.name], checked, { ...o, signal }, () => (checked = true));
      } catch (e) {
        if (signal.aborted) break;
        if (isIavlError(e, "VERSION_PRUNED") && local !== undefined && !checked) {
          // The source no longer keeps this replica's last version: the next version's hashes are the check.
          checked = true;
        } else if (isIavlError(e, "VERSION_PRUNED") && local !== undefined) {
          note(`the source no longer holds version ${local.version + 1}'s operations: starting again from its snapshot`);
          local.close();
          local = undefined;
          status = undefined;
          stale = true;
        } else if (isIavlError(e, "VERSION_PRUNED") || isIavlError(e, "SOURCE_UNAVAILABLE") || isIavlError(e, "VERSION_NOT_FOUND") || isIavlError(e, "VERSION_ROLLED_BACK")) {
          // A snapshot the source pruned while it was read, a source away or rolled back: ask again.
          note(`${(e as Error).message}; asking again in ${o.retryMs} ms`);
          if (local === undefined) status = undefined;
          await pause();
        } else {
          throw e;
        }
      }
    }
    return local?.version ?? 0;
  } finally {
    local?.close();
  }
}

/**
 * Applies the source's versions after the replica's last, in order across every store, until the replica stops or
 * something fails (the replica's last version first compared with the source's, when not yet `checked`). A thread
 * reads them ahead (feed.ts), so that fetching overlaps applying.
 */
async function step(
  url: string,
  source: Source,
  local: LocalReplica,
  names: string[],
  checked: boolean,
  o: { batch: number; waitMs: number; onVersion?: ((v: number) => void) | undefined; signal: AbortSignal },
  onChecked: () => void,
): Promise<void> {
  if (!checked) {
    // The replica's last version, compared by its hashes alone (its operations may weigh hundreds of MB).
    const hashes = await Promise.all(names.map((n) => source.hashes(n, local.version)));
    local.check(new Map(names.map((n, i) => [n, hashes[i]!])));
    onChecked();
  }
  const feed = new Feed({ url, names, from: local.version + 1, batch: o.batch, waitMs: o.waitMs }, o.signal);
  try {
    while (!o.signal.aborted) {
      const frames = await feed.next();
      const versions = [...frames.values()].map((f) => f.version);
      if (versions.some((v) => v !== local.version + 1)) {
        throw new IavlError("SOURCE_UNAVAILABLE", `the source answered version(s) ${versions.join(", ")} where ${local.version + 1} was asked`);
      }
      local.apply(frames);
      o.onVersion?.(local.version);
    }
  } finally {
    await feed.close();
  }
}

/** True when `dir` is missing or holds nothing. */
function isEmpty(dir: string): boolean {
  return !existsSync(dir) || readdirSync(dir).length === 0;
}
