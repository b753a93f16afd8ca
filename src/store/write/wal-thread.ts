/**
 * The WAL checkpointer of a store: a worker thread with its own connection that copies committed pages from the WAL
 * into the database file after commits, so that no commit pays for it inline (`wal_autocheckpoint` is off on the
 * writing connections). PASSIVE: it never waits for a reader or the writer.
 * @module
 */
import { workerData } from "node:worker_threads";
import { ThreadEnd, type ChannelData } from "../../base/thread-channel.js";
import { openWriter, type Connection } from "../../sqlite/connection.js";
import { passiveWalCheckpoint } from "../../sqlite/wal.js";
import { COMMITS, WAL_FRAMES, type WalThreadData } from "./wal-checkpointer.js";

const data = workerData as WalThreadData & ChannelData;
const end = new ThreadEnd(data);
let db: Connection | undefined;
try {
  db = openWriter(data.file, "normal", data.busyTimeoutMs);
  let seen = end.slots.get(COMMITS);
  while (!end.stopping) {
    // Woken by a commit (or every second, to notice a stop).
    end.slots.wait(COMMITS, seen, 1000);
    const now = end.slots.get(COMMITS);
    if (now === seen || end.stopping) continue;
    seen = now;
    end.slots.set(WAL_FRAMES, passiveWalCheckpoint(db));
  }
} finally {
  db?.close();
  end.closed();
}
