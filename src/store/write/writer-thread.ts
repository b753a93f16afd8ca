/**
 * The background writer of durability "async": a worker thread with its own connection that lands queued
 * versions in order, one transaction each, and publishes the newest durable version through shared memory.
 * @module
 */
import { parentPort, workerData } from "node:worker_threads";
import { IavlError, isIavlError } from "../../base/errors.js";
import { openWriter, type Connection } from "../../sqlite/connection.js";
import { unpackWrite, type PackedWrite } from "../../sqlite/packed-write.js";
import type { VersionRows } from "../../sqlite/rows.js";
import { StoreWriter } from "../../sqlite/store-writer.js";
import { boundWal } from "../../sqlite/wal.js";
import { wakeCheckpointer } from "./wal-checkpointer.js";
import { CLOSED, DURABLE, FAILED, type WriterFailure, type WriterThreadData } from "./write-queue.js";

const data = workerData as WriterThreadData;
/** How long a version waits for a lock held elsewhere before the writer gives up: commits wait on a full queue meanwhile. */
const PATIENCE_MS = 60 * Math.max(data.busyTimeoutMs, 100);
const sleeper = new Int32Array(new SharedArrayBuffer(4));
const state = new BigInt64Array(data.state);
const wal = new Int32Array(data.walState);
/** Marks the thread closed (nothing of it writes any more): the owner's close() waits for exactly this. */
function closed(): void {
  Atomics.store(state, CLOSED, 1n);
  Atomics.notify(state, CLOSED);
}

/** Reports a failure of `version`: nothing later may land, so that versions stay in order. */
function failed(version: number, e: unknown): void {
  const failure: WriterFailure = { version, message: (e as Error).message, code: e instanceof IavlError ? e.code : undefined };
  data.errors.postMessage(failure);
  Atomics.store(state, FAILED, 1n);
  Atomics.notify(state, DURABLE);
}

let db: Connection;
let store: StoreWriter;
try {
  db = openWriter(data.file, "normal", data.busyTimeoutMs);
  store = new StoreWriter(db);
} catch (e) {
  // The owner may be blocked waiting for this thread, where no 'error' event reaches it.
  failed(Number(state[DURABLE]) + 1, e);
  closed();
  throw e;
}

parentPort!.on("message", (msg: { packed?: PackedWrite; close?: true }) => {
  if (msg.close) {
    try {
      db.close();
    } finally {
      closed();
      parentPort!.close();
    }
    return;
  }
  const packed = msg.packed!;
  let version = Number(state[DURABLE]) + 1;
  try {
    if (Atomics.load(state, FAILED) !== 0n) return;
    const w = unpackWrite(packed);
    version = w.version.version;
    boundWal(db, data.file);
    land(w);
    Atomics.store(state, DURABLE, BigInt(version));
    wakeCheckpointer(wal);
  } catch (e) {
    failed(version, e);
  }
  data.returns.postMessage(packed, [packed.nums.buffer as ArrayBuffer, packed.bytes.buffer as ArrayBuffer]);
  Atomics.notify(state, DURABLE);
});

/** Writes `w`, waiting out another connection's lock for up to {@link PATIENCE_MS}: a version in the queue is never lost to a busy moment. */
function land(w: VersionRows): void {
  const deadline = Date.now() + PATIENCE_MS;
  for (;;) {
    try {
      store.writeVersion(w);
      return;
    } catch (e) {
      if (!isIavlError(e, "LOCKED") || Date.now() > deadline) throw e;
      Atomics.wait(sleeper, 0, 0, 50);
    }
  }
}
