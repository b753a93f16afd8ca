/**
 * The background writer of durability "async": a worker thread with its own connection that lands queued
 * versions in order, and publishes the newest durable version in its channel's slots. The versions waiting when it
 * turns to the queue land in one transaction (up to {@link GROUP_MOST}): a page several of them change reaches the
 * WAL once, so a writer that fell behind catches up with fewer page writes than it fell behind by.
 * @module
 */
import { parentPort, receiveMessageOnPort, workerData } from "node:worker_threads";
import { IavlError, isIavlError } from "../../base/errors.js";
import { postMoving, retrying, Slots, ThreadEnd, type ChannelData } from "../../base/thread-channel.js";
import { WriteTurn } from "../../base/write-turn.js";
import { openWriter, type Connection } from "../../sqlite/connection.js";
import { unpackWrite, type PackedWrite } from "../../sqlite/packed-write.js";
import { StoreWriter } from "../../sqlite/store-writer.js";
import { boundWal } from "../../sqlite/wal.js";
import { markPruned } from "../../sqlite/prune-rows.js";
import { COMMITS, WAL_FRAMES } from "./wal-checkpointer.js";
import { DURABLE, FAILED, type WriterFailure, type WriterThreadData } from "./write-queue.js";

const data = workerData as WriterThreadData & ChannelData;
const end = new ThreadEnd(data);
/** The checkpointer's slots; undefined when the WAL is checkpointed by another process, and never here. */
const wal = data.walSlots === undefined ? undefined : new Slots(data.walSlots);
const turn = new WriteTurn(data.turn);
/** How long a version waits for a lock held elsewhere before the writer gives up: commits wait on a full queue meanwhile. */
const PATIENCE_MS = 60 * Math.max(data.busyTimeoutMs, 100);

/** Reports a failure of `version`: nothing later lands until the owner asks to retry. */
function failed(version: number, e: unknown): void {
  const failure: WriterFailure = { version, message: (e as Error).message, code: e instanceof IavlError ? e.code : undefined };
  data.errors.postMessage(failure);
  end.slots.set(FAILED, 1);
  end.slots.wake(DURABLE);
}

let db: Connection;
let store: StoreWriter;
try {
  db = openWriter(data.file, "normal", data.busyTimeoutMs);
  store = new StoreWriter(db);
} catch (e) {
  // The owner may be blocked waiting for this thread, where no 'error' event reaches it.
  failed(end.slots.get(DURABLE) + 1, e);
  end.closed();
  throw e;
}

/**
 * Versions not written since a failure, oldest first (the failed one too): they wait, in order, for the owner's
 * `retry` (its caller committed or flushed again, perhaps once space returned).
 */
const held: PackedWrite[] = [];

/** The last automatic prune target this thread marked. */
let marked = 0;

/**
 * In the turn of a version just landed: the versions of the newest automatic prune asked, deleted and its base
 * recorded (the prune thread's first step, which it repeats and finds done). A failure is left to the prune thread.
 */
function markAsked(): void {
  const target = turn.markAsked();
  if (target <= marked) return;
  marked = target;
  try {
    markPruned(db, target, data.keepEvery);
  } catch {
    // The prune thread marks it in its own turn, and reports what fails there.
  }
}

/**
 * The most versions one transaction lands: half the queue's default bound. A commit that finds the queue full waits
 * for a whole group to land (at 8, the 1M-key churn's p99 was 400-440 ms against 200-335 at 4, in paired probes).
 */
const GROUP_MOST = 4;

/** Runs `write` in the owner's turn: the WAL bounded before it, the automatic prune asked marked after it. */
function inTurn(write: () => void): void {
  turn.owner(() => {
    if (wal !== undefined) boundWal(db, data.file, wal.get(WAL_FRAMES));
    write();
    markAsked();
  });
}

/** Runs `write`, waiting out another connection's lock: a version in the queue is never lost to a busy moment. */
function patiently(write: () => void): void {
  retrying(write, (e) => isIavlError(e, "LOCKED"), PATIENCE_MS);
}

/** Writes `packed`; false, with the failure reported, when it could not. */
function land(packed: PackedWrite): boolean {
  let version = end.slots.get(DURABLE) + 1;
  try {
    const w = unpackWrite(packed);
    version = w.version.version;
    inTurn(() => patiently(() => store.writeVersion(w)));
  } catch (e) {
    failed(version, e);
    return false;
  }
  landed(packed, version);
  return true;
}

/**
 * Writes `group` (several versions, in order) in one transaction; false, with nothing of it written, when any of
 * it failed: then they land one by one, so that those before the failing one land and its failure is reported as
 * it would be alone.
 */
function landGroup(group: PackedWrite[]): boolean {
  const versions: number[] = [];
  try {
    inTurn(() => {
      patiently(() => store.beginGroup());
      let ok = false;
      try {
        for (const packed of group) {
          const w = unpackWrite(packed);
          store.writeVersion(w);
          versions.push(w.version.version);
        }
        ok = true;
      } finally {
        store.endGroup(ok);
      }
    });
  } catch {
    return false;
  }
  group.forEach((packed, i) => landed(packed, versions[i]!));
  return true;
}

/** After `packed` landed as `version`: published, the checkpointer told, its buffers handed back. */
function landed(packed: PackedWrite, version: number): void {
  end.slots.set(DURABLE, version);
  wal?.add(COMMITS);
  postMoving(data.returns, packed, [packed.nums, packed.bytes]);
}

/** Lands what is held, in order, until a failure. */
function landHeld(): void {
  for (takeWaiting(); held.length > 0; takeWaiting()) {
    const n = Math.min(held.length, GROUP_MOST);
    if (n > 1 && landGroup(held.slice(0, n))) {
      held.splice(0, n);
      continue;
    }
    // One by one after a group failed: those before the failing version land, and its failure is reported.
    for (let i = 0; i < n; i++) {
      if (!land(held[0]!)) return;
      held.shift();
    }
  }
}

/** True once the owner asked to close, seen while taking the messages waiting. */
let closing = false;

/** Takes the versions already posted (and a close) out of the port, so that they join the next group. */
function takeWaiting(): void {
  for (let m = receiveMessageOnPort(parentPort!); m !== undefined; m = receiveMessageOnPort(parentPort!)) {
    const msg = m.message as Message;
    if (msg.packed !== undefined) held.push(msg.packed);
    if (msg.close) closing = true;
  }
}

type Message = { packed?: PackedWrite; retry?: true; close?: true };

parentPort!.on("message", (msg: Message) => {
  if (msg.close) closing = true;
  else if (msg.packed !== undefined) held.push(msg.packed);
  // Nothing lands past a version that failed, so that versions stay in order.
  if (!closing && (msg.packed === undefined || held.length === 1)) landHeld();
  if (closing) end.closeWith(db);
});
