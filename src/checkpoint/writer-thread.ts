/**
 * The background writer of durability "async": a worker thread with its own connection that lands queued
 * versions in order, one transaction each, and publishes the newest durable version through shared memory.
 * @module
 */
import { parentPort, workerData } from "node:worker_threads";
import { IavlError } from "../base/errors.js";
import { openWriter } from "../sqlite/connection.js";
import type { VersionWrite } from "../sqlite/rows.js";
import { StoreWriter } from "../sqlite/store-writer.js";
import { CLOSED, DURABLE, FAILED, type WriterFailure, type WriterThreadData } from "./write-queue.js";

const data = workerData as WriterThreadData;
const state = new BigInt64Array(data.state);
const db = openWriter(data.file, "normal", data.busyTimeoutMs);
const store = new StoreWriter(db);

parentPort!.on("message", (msg: { write?: VersionWrite; close?: true }) => {
  if (msg.close) {
    try {
      db.close();
    } finally {
      Atomics.store(state, CLOSED, 1n);
      Atomics.notify(state, CLOSED);
      parentPort!.close();
    }
    return;
  }
  const w = msg.write!;
  try {
    if (Atomics.load(state, FAILED) !== 0n) return;
    store.writeVersion(w);
    Atomics.store(state, DURABLE, BigInt(w.version.version));
  } catch (e) {
    const failure: WriterFailure = { version: w.version.version, message: (e as Error).message, code: e instanceof IavlError ? e.code : undefined };
    data.errors.postMessage(failure);
    Atomics.store(state, FAILED, 1n);
  }
  Atomics.notify(state, DURABLE);
});
