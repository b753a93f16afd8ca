/**
 * The thread that reads a version's leaves for a large export or audit (see leaf-stream.ts): pages in key order on a
 * read-only connection of its own, posted ahead of the walk, each checked whole (the version still kept, not
 * replaced by a rollback) before it is posted.
 * @module
 */
import { workerData } from "node:worker_threads";
import { IavlError } from "../../base/errors.js";
import { mapFile, openReader, type Connection } from "../../sqlite/connection.js";
import { StoreReader } from "../../sqlite/store-reader.js";
import { AHEAD, LEAF_PAGE, packPage, POSTED, STOP, TAKEN, type LeafFailure, type LeafThreadData } from "./leaf-stream.js";

const data = workerData as LeafThreadData;
const state = new Int32Array(data.state);
const post = (m: object, transfer: ArrayBuffer[] = []): void => {
  data.port.postMessage(m, transfer);
  Atomics.add(state, POSTED, 1);
  Atomics.notify(state, POSTED);
};

let db: Connection | undefined;
try {
  db = openReader(data.file);
  // A dedicated connection for one scan: mapping the file saves a copy of every page it reads.
  mapFile(db, 2 ** 40);
  const store = new StoreReader(db);
  let after: Uint8Array | undefined;
  for (;;) {
    while (Atomics.load(state, POSTED) - Atomics.load(state, TAKEN) >= AHEAD && Atomics.load(state, STOP) === 0) {
      Atomics.wait(state, TAKEN, Atomics.load(state, TAKEN), 100);
    }
    if (Atomics.load(state, STOP) !== 0) break;
    const { rows, next } = store.leaves.page(data.version, after, LEAF_PAGE);
    const kept = store.versions.state(data.version, data.since);
    if (kept === "pruned") throw new IavlError("VERSION_PRUNED", `version ${data.version} was pruned while it was being read`);
    if (kept === "rolled-back") throw new IavlError("VERSION_ROLLED_BACK", `version ${data.version} was removed by a rollback while it was being read`);
    const page = packPage(rows, next === undefined);
    post(page, [page.meta.buffer as ArrayBuffer, page.lens.buffer as ArrayBuffer, page.bytes.buffer as ArrayBuffer]);
    if (page.last) break;
    after = next;
  }
} catch (e) {
  const failure: LeafFailure = { failed: { code: e instanceof IavlError ? e.code : undefined, message: (e as Error).message } };
  post(failure);
} finally {
  db?.close();
}
