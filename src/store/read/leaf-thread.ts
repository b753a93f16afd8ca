/**
 * The thread that reads a version's leaves for a large export or audit (see leaf-stream.ts): pages in key order on a
 * read-only connection of its own, posted ahead of the walk, each checked whole (the version still kept, not
 * replaced by a rollback) before it is posted.
 * @module
 */
import { workerData } from "node:worker_threads";
import { IavlError } from "../../base/errors.js";
import { postMoving, ThreadEnd, type ChannelData } from "../../base/thread-channel.js";
import { mapFile, openReader, type Connection } from "../../sqlite/connection.js";
import { StoreReader } from "../../sqlite/store-reader.js";
import { AHEAD, LEAF_PAGE, packPage, POSTED, TAKEN, type LeafFailure, type LeafThreadData } from "./leaf-stream.js";

const data = workerData as LeafThreadData & ChannelData;
const end = new ThreadEnd(data);
const posted = (): void => end.slots.add(POSTED);

let db: Connection | undefined;
try {
  db = openReader(data.file);
  // A dedicated connection for one scan: mapping the file saves a copy of every page it reads.
  mapFile(db, 2 ** 40);
  const store = new StoreReader(db);
  let after: Uint8Array | undefined;
  for (;;) {
    for (let taken = end.slots.get(TAKEN); end.slots.get(POSTED) - taken >= AHEAD && !end.stopping; taken = end.slots.get(TAKEN)) {
      end.slots.wait(TAKEN, taken, 100);
    }
    if (end.stopping) break;
    const { rows, next } = store.leaves.page(data.version, after, LEAF_PAGE, data.checked);
    const kept = store.versions.state(data.version, data.since);
    if (kept === "pruned") throw new IavlError("VERSION_PRUNED", `version ${data.version} was pruned while it was being read`);
    if (kept === "rolled-back") throw new IavlError("VERSION_ROLLED_BACK", `version ${data.version} was removed by a rollback while it was being read`);
    const page = packPage(rows, next === undefined);
    postMoving(data.port, page, [page.nums, page.bytes]);
    posted();
    if (page.last) break;
    after = next;
  }
} catch (e) {
  const failure: LeafFailure = { failed: { code: e instanceof IavlError ? e.code : undefined, message: (e as Error).message } };
  data.port.postMessage(failure);
  posted();
} finally {
  db?.close();
  end.closed();
}
