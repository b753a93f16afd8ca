/**
 * The prune thread (one worker thread for the life of a store, started by the pruner): it waits for work on the
 * pruner's shared slots and port, and runs each prune whole, step after step, each step on a connection of its own
 * opened for the step. It needs nothing from the owner's event loop, so automatic prunes keep up with a writer that
 * commits in a loop that never yields; only explicit prunes' answers wait for the owner's event loop.
 * @module
 */
import { receiveMessageOnPort, workerData } from "node:worker_threads";
import { IavlError } from "../base/errors.js";
import { Slots, STOP, ThreadEnd, type ChannelData } from "../base/thread-channel.js";
import { WriteTurn } from "../base/write-turn.js";
import { databaseBytes, openWriter, type Connection } from "../sqlite/connection.js";
import { paceWal } from "../sqlite/wal.js";
import { yieldBeforeWrites } from "../sqlite/write-errors.js";
import { markPruned, pruneLeaves, reclaim, sweepLeaves, swapShards } from "../sqlite/prune-rows.js";
import { pruneBranches } from "../sqlite/orphaned-branches.js";
import { deadRows } from "./plan.js";
import { copySurvivors } from "./survivors.js";
import { ACTIVE, AUTO_TARGET, WAKE, type Failure, type PruneReply, type PruneRequest, type PruneResult, type PruneTask } from "./pruner.js";

function failure(e: unknown): Failure {
  return { code: e instanceof IavlError ? e.code : undefined, message: (e as Error).message };
}

/** Serves prunes until the owner sets {@link STOP}. */
function serve(task: PruneTask & ChannelData): void {
  const slots = new Slots(task.slots);
  const queue: PruneRequest[] = [];
  let failedAt = -1;
  let reached = 0;
  const stopped = (): boolean => slots.get(STOP) !== 0;
  try {
    while (!stopped()) {
      // Read before looking for work: a request made after the look bumps it, so the wait below returns at once.
      const wake = slots.get(WAKE);
      for (let m = receiveMessageOnPort(task.port); m !== undefined; m = receiveMessageOnPort(task.port)) queue.push(m.message as PruneRequest);
      const job = queue.shift();
      const target = slots.get(AUTO_TARGET);
      if (job !== undefined) {
        const progress = (done: number, total: number, phase: string): void => task.port.postMessage({ id: job.id, progress: [done, total, phase] } satisfies PruneReply);
        try {
          const result = prune(task, job.upTo, job.keepEvery, 0, progress);
          task.port.postMessage({ id: job.id, result } satisfies PruneReply);
        } catch (e) {
          task.port.postMessage({ id: job.id, failed: failure(e) } satisfies PruneReply);
        }
      } else if (task.auto !== undefined && target > reached && target !== failedAt) {
        try {
          prune(task, target, task.auto.keepEvery, task.auto.keepFree, () => undefined);
          reached = target;
        } catch (e) {
          // Tried again once a newer target comes: the writer's next commits.
          failedAt = target;
          if (!stopped()) task.port.postMessage({ auto: target, failed: failure(e) } satisfies PruneReply);
        }
      } else slots.wait(WAKE, wake, 1000);
    }
  } finally {
    task.port.close();
  }
}

type Progress = (done: number, total: number, phase: string) => void;

/**
 * One prune, whole, its steps in order (see pruner.ts). Each step can be repeated after a crash or a stop: nothing a
 * kept version needs is removed before the step that makes it unnecessary has committed.
 */
function prune(task: PruneTask & ChannelData, upTo: number, keepEvery: number | undefined, keepFree: number, onProgress: Progress): PruneResult {
  const before = databaseBytes(task.file);
  const plan = step(task, (db) => markPruned(db, upTo, keepEvery));
  onProgress(1, 5, "versions");
  const through = plan.base?.version;
  if (through !== undefined) {
    // Rows superseded at or before the version replays start from are dead, a version at a time.
    while (!step(task, (db) => pruneLeaves(db, through, plan.keepFrom, plan.snapshots, 16))) onProgress(2, 5, "values");
    if (plan.droppedSnapshots) {
      const bounds = [...plan.snapshots, through];
      const kept = (v: number): boolean => v >= plan.keepFrom || plan.snapshots.includes(v);
      let from: Uint8Array | undefined;
      do {
        from = step(task, (db, checkStop) => {
          let at = from;
          for (let page = 0; page < 8 && (at = sweepLeaves(db, through, at, (rows) => deadRows(rows, bounds, kept))) !== undefined; page++) checkStop();
          return at;
        });
        onProgress(2, 5, "values of dropped snapshots");
      } while (from !== undefined);
    }
  }
  if (through !== undefined) {
    // Branches no tree from the base on holds; a dropped snapshot's are found again among those it kept.
    let after = plan.droppedSnapshots ? 0 : undefined;
    while ((after = step(task, (db) => pruneBranches(db, through, plan.snapshots, after))) !== undefined) onProgress(3, 5, "branches");
  }
  if (plan.compactThrough >= 0) step(task, (db, checkStop) => copySurvivors(db, plan, (n) => onProgress(3, 5, `survivors (${n} nodes)`), checkStop));
  const droppedShards = step(task, (db) => swapShards(db, plan));
  onProgress(4, 5, "shards");
  while (step(task, (db) => reclaim(db, task.ownWal, undefined, keepFree)) > 0) onProgress(4, 5, "reclaim");
  onProgress(5, 5, "done");
  return {
    pruned: plan.removed,
    keptFrom: plan.keepFrom,
    // The database file alone: the WAL holds this prune's writes (up to its size limit) until the next commits reuse
    // it or a close removes it, so counting it made a prune that shrank the file by a third report nothing.
    reclaimedBytes: Math.max(0, before - databaseBytes(task.file)),
    droppedShards,
  };
}

/** Runs one step on a connection of its own, counted as active, unless the owner asked to stop. */
function step<T>(task: PruneTask & ChannelData, fn: (db: Connection, checkStop: () => void) => T): T {
  const slots = new Slots(task.slots);
  slots.add(ACTIVE);
  try {
    const checkStop = (): void => {
      if (slots.get(STOP) !== 0) throw new IavlError("CLOSED", "the store was closed during the prune; it is safe to run it again");
    };
    // Checked after counting this step as active, so that a closing owner either waits for it or it never opens.
    checkStop();
    const db = openWriter(task.file, "normal", task.busyTimeoutMs);
    // Each transaction first keeps the WAL bounded (when the store checkpoints its own), then waits while a commit is
    // waiting or running (at most a busy timeout, then SQLite's own wait).
    const turn = new WriteTurn(task.turn);
    yieldBeforeWrites(db, () => {
      if (task.ownWal) paceWal(db, task.file);
      turn.yieldToOwner(task.busyTimeoutMs);
    });
    try {
      return fn(db, checkStop);
    } finally {
      db.close();
    }
  } finally {
    slots.add(ACTIVE, -1);
  }
}

const task = workerData as PruneTask & ChannelData;
const end = new ThreadEnd(task);
try {
  serve(task);
} finally {
  // Every step closed its own connection: the thread holds nothing of the store any more.
  end.closed();
}
