/**
 * The background writer of durability "async": a worker thread with its own connection that lands queued
 * versions in order, one transaction each, and publishes the newest durable version through shared memory.
 * @module
 */
import { parentPort, workerData, type MessagePort } from "node:worker_threads";
import { openWriter } from "./connection.js";
import { StoreWriter, type VersionWrite } from "./store.js";

/** What the owner passes to the worker. */
export interface WriterWorkerData {
  file: string;
  /** [0] = newest durable version, [1] = 1 once the writer has failed. */
  state: SharedArrayBuffer;
  /** Where failures are reported, so that a blocked owner can read them synchronously. */
  errors: MessagePort;
}

const data = workerData as WriterWorkerData;
const state = new BigInt64Array(data.state);
const db = openWriter(data.file, "normal");
const store = new StoreWriter(db);

parentPort!.on("message", (msg: { write?: VersionWrite; close?: true }) => {
  if (msg.close) {
    db.close();
    parentPort!.close();
    return;
  }
  const w = msg.write!;
  try {
    if (Atomics.load(state, 1) !== 0n) return; // after a failure nothing later may land: versions stay in order
    store.writeVersion(w);
    Atomics.store(state, 0, BigInt(w.version.version));
  } catch (e) {
    data.errors.postMessage({ version: w.version.version, message: (e as Error).message });
    Atomics.store(state, 1, 1n);
  }
  Atomics.notify(state, 0);
});
