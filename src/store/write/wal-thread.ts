/**
 * The WAL checkpointer of a store: a worker thread with its own connection that copies committed pages from the WAL
 * into the database file after commits, so that no commit pays for it inline (`wal_autocheckpoint` is off on the
 * writing connections). PASSIVE: it never waits for a reader or the writer.
 * @module
 */
import { workerData } from "node:worker_threads";
import { openWriter, type Connection } from "../../sqlite/connection.js";
import { checkpointPassive } from "../../sqlite/wal.js";
import { CLOSED, COMMITS, STOP, WAL_FRAMES, type WalThreadData } from "./wal-checkpointer.js";

const data = workerData as WalThreadData;
const state = new Int32Array(data.state);
let db: Connection | undefined;
try {
  db = openWriter(data.file, "normal", data.busyTimeoutMs);
  let seen = Atomics.load(state, COMMITS);
  while (Atomics.load(state, STOP) === 0) {
    // Woken by a commit (or every second, to notice a stop).
    Atomics.wait(state, COMMITS, seen, 1000);
    const now = Atomics.load(state, COMMITS);
    if (now === seen || Atomics.load(state, STOP) !== 0) continue;
    seen = now;
    Atomics.store(state, WAL_FRAMES, checkpointPassive(db));
  }
} finally {
  db?.close();
  Atomics.store(state, CLOSED, 1);
  Atomics.notify(state, CLOSED);
}
