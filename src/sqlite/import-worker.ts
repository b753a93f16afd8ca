/**
 * The writer thread of an import: inserts row batches while the main thread hashes the next ones (the idea of
 * cosmos/iavl PR #664), acknowledging each batch so that the importer can bound what is in flight.
 * @module
 */
import { parentPort, workerData } from "node:worker_threads";
import { openWriter } from "./connection.js";
import { StoreWriter, type ImportBatch, type VersionRow } from "./store.js";

const { file } = workerData as { file: string };
const db = openWriter(file, "normal");
// The store is invisible (in a temporary folder) until the import completes, so nothing needs syncing before the end.
db.pragma("synchronous = OFF");
const store = new StoreWriter(db);

parentPort!.on("message", (msg: { batch?: ImportBatch; commit?: VersionRow; close?: true }) => {
  try {
    if (msg.batch !== undefined) store.writeImportBatch(msg.batch);
    if (msg.commit !== undefined) {
      db.pragma("synchronous = FULL");
      store.writeCommitRow(msg.commit);
      db.pragma("wal_checkpoint(TRUNCATE)");
    }
    if (msg.close) {
      db.close();
      parentPort!.postMessage({ closed: true });
      parentPort!.close();
      return;
    }
    parentPort!.postMessage({ ok: true });
  } catch (e) {
    parentPort!.postMessage({ error: (e as Error).message });
  }
});
