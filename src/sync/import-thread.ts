/**
 * The writer thread of an import: inserts row batches while the main thread hashes the next ones (the idea of
 * cosmos/iavl PR #664), acknowledging each batch so that the importer can bound what is in flight.
 * @module
 */
import { parentPort, workerData } from "node:worker_threads";
import { ThreadEnd, type ChannelData } from "../base/thread-channel.js";
import { checkpointWal, openWriter, setSync } from "../sqlite/connection.js";
import type { ImportBatch, VersionRow } from "../sqlite/rows.js";
import { StoreWriter } from "../sqlite/store-writer.js";
import { boundWal } from "../sqlite/wal.js";

const data = workerData as { file: string } & ChannelData;
const file = data.file;
const end = new ThreadEnd(data);
// The store is invisible (in a temporary folder) until the import completes, so nothing needs syncing before the end.
const db = openWriter(file, "off");
const store = new StoreWriter(db);

parentPort!.on("message", (msg: { batch?: ImportBatch; commit?: VersionRow; close?: true }) => {
  try {
    if (msg.batch !== undefined) {
      store.writeImportBatch(msg.batch);
      boundWal(db, file);
    }
    if (msg.commit !== undefined) {
      setSync(db, "full");
      store.writeImportCommit(msg.commit);
      checkpointWal(db);
    }
    if (msg.close) return end.closeWith(db);
    parentPort!.postMessage({ ok: true });
  } catch (e) {
    parentPort!.postMessage({ error: (e as Error).message, code: (e as { code?: unknown }).code });
  }
});
