/**
 * The thread that reads a replica's feed (`GET /v1/ops` of every store) from a version on, as long as its owner wants:
 * fetching, gathering frames and long-polling off the replica's main thread, which only applies and commits. Each
 * version's frames (one per store, in the owner's order) move to the owner undecoded, at most `AHEAD_BYTES` ahead of
 * what it consumed; a long poll that ends with nothing newer is posted as the source's latest version, so that the
 * owner can compare that version with its own; a failure is posted as its code and message, and ends the thread.
 * @module
 */
import { parentPort, workerData } from "node:worker_threads";
import { isIavlError } from "../base/errors.js";
import { postMoving, ThreadEnd, type ChannelData } from "../base/thread-channel.js";
import { AHEAD_BYTES, CONSUMED, type FeedMessage, type FeedThreadData } from "./feed.js";
import { Source } from "./source.js";

async function run(d: FeedThreadData, end: ThreadEnd, port: NonNullable<typeof parentPort>): Promise<void> {
  const source = new Source(d.url);
  let next = d.from;
  let sent = 0;
  while (!end.stopping) {
    const answers = await Promise.all(d.names.map((n) => source.feed(n, next, d.batch, d.waitMs)));
    const feeds = answers.map((a) => a.frames);
    const from = next;
    try {
      for (;;) {
        const got = await Promise.all(feeds.map((f) => f.next()));
        // A store's answer may end a version earlier than another's (a commit landed between the requests).
        if (got.some((r) => r.done === true) || end.stopping) break;
        const frames = got.map((r) => r.value as Uint8Array);
        postMoving(port, { frames } satisfies FeedMessage, frames);
        sent += frames.reduce((n, f) => n + f.length, 0);
        next++;
        for (let seen = end.slots.get(CONSUMED); sent - seen >= AHEAD_BYTES && !end.stopping; seen = end.slots.get(CONSUMED)) {
          await end.slots.waitAsync(CONSUMED, seen, 100);
        }
      }
    } finally {
      await Promise.all(feeds.map((f) => f.return(undefined)));
    }
    const latest = Math.min(...answers.map((a) => a.latest));
    if (next === from && latest < from && !end.stopping) port.postMessage({ idle: latest } satisfies FeedMessage);
  }
}

const d = workerData as FeedThreadData & ChannelData;
const end = new ThreadEnd(d);
const port = parentPort!;
try {
  await run(d, end, port);
} catch (e) {
  const code = isIavlError(e) ? e.code : "SOURCE_UNAVAILABLE";
  port.postMessage({ error: { code, message: (e as Error).message } } satisfies FeedMessage);
} finally {
  end.closed();
}
