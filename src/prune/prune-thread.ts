/**
 * The prune thread, the one thread of the pruner's piscina pool. Each task runs the prunes pending, each whole, step
 * after step, each step on a connection of its own opened for the step, and returns once none is left (or the owner
 * stopped), handing the thread back through the pruner's STATE slot (see pruner.ts); the thread keeps the port and
 * what it reached from one task to the next. It needs nothing from the owner's event loop, so automatic prunes keep
 * up with a writer that commits in a loop that never yields; only explicit prunes' answers wait for the owner's event
 * loop.
 * @module
 */
import { receiveMessageOnPort, workerData, type MessagePort } from "node:worker_threads";
import { IavlError } from "../base/errors.js";
import { Slots, STOP } from "../base/thread-channel.js";
import { WriteTurn } from "../base/write-turn.js";
import { databaseBytes, openWriter, type Connection } from "../sqlite/connection.js";
import { paceWal } from "../sqlite/wal.js";
import { yieldBeforeWrites } from "../sqlite/write-errors.js";
import { markPruned, pruneLeaves, reclaim, snapshotsSwept, sweepLeaves, swapShards, type PrunePlan } from "../sqlite/prune-rows.js";
import { pruneBranches } from "../sqlite/orphaned-branches.js";
import { deadRows } from "./plan.js";
import { copySurvivors } from "./survivors.js";
import {
  ACTIVE,
  AUTO_TARGET,
  IDLE,
  LOADED,
  RUNNING,
  STATE,
  type DrainTask,
  type Failure,
  type PruneReply,
  type PruneRequest,
  type PruneResult,
  type PruneThreadData,
} from "./pruner.js";

const data = workerData as PruneThreadData;
const slots = new Slots(data.slots);
const turn = new WriteTurn(data.turn);
/** The port explicit prunes come through, from the first task on. */
let port: MessagePort | undefined;
/** Explicit prunes received and not yet run. */
const queue: PruneRequest[] = [];
/** The automatic target last reached, and the last one that failed (tried again once a newer one comes). */
let reached = 0;
let failedAt = -1;

const stopped = (): boolean => slots.get(STOP) !== 0;

function failure(e: unknown): Failure {
  return { code: e instanceof IavlError ? e.code : undefined, message: (e as Error).message };
}

/** The automatic target to prune to now, if any. */
function autoTarget(): number | undefined {
  const target = slots.get(AUTO_TARGET);
  return data.auto !== undefined && target > reached && target !== failedAt ? target : undefined;
}

/** True when a prune is pending: explicit ones are taken off the port into the queue. */
function pending(): boolean {
  if (port !== undefined) for (let m = receiveMessageOnPort(port); m !== undefined; m = receiveMessageOnPort(port)) queue.push(m.message as PruneRequest);
  return queue.length > 0 || autoTarget() !== undefined;
}

/**
 * One task: runs the prunes pending, explicit ones first, until none is left or the owner stops. A task counts itself
 * in ACTIVE before it looks at STOP, so that a closing owner either waits for it or it opens nothing.
 */
export default function drain(task: DrainTask): void {
  port ??= task.port;
  // Only a thread piscina started in place of a dead one lacks it: the task fails, and the pruner with it.
  if (port === undefined) throw new Error("the prune thread was replaced and lost its port");
  slots.add(ACTIVE);
  try {
    while (!stopped()) {
      if (!pending()) {
        // The hand-off: the task ends, then looks once more, for work posted before the owner could see it end; it
        // goes on with that work only if it takes STATE back before the owner starts another task for it.
        slots.set(STATE, IDLE);
        if (!pending() || !slots.compareExchange(STATE, IDLE, RUNNING)) return;
        continue;
      }
      const job = queue.shift();
      if (job !== undefined) runExplicit(job);
      else runAuto(autoTarget()!);
    }
  } finally {
    slots.add(ACTIVE, -1);
  }
}

function runExplicit(job: PruneRequest): void {
  const reply = (m: PruneReply): void => port!.postMessage(m);
  try {
    const result = prune(job.upTo, job.keepEvery, 0, (done, total, phase) => reply({ id: job.id, progress: [done, total, phase] }));
    reply({ id: job.id, result });
  } catch (e) {
    reply({ id: job.id, failed: failure(e) });
  }
}

/**
 * Thrown at a step boundary of an automatic prune once a newer target has moved the replay base: the prune is left
 * as a kill would leave it (every step can be repeated, and the next prune finishes what it began), and the newer
 * one starts at once, so that the new base's branches and pages go first.
 */
class Superseded extends Error {}

function runAuto(target: number): void {
  let marked = target;
  // Between its transactions, a prune takes each newer target's versions at once (one short transaction), so that
  // the versions kept stay near keepRecent however long its rows take; it goes on with its rows unless that moved
  // the base. Starting over at every newer target made it mark again and look for branches every ~100 ms under a
  // churn, and its values steps of 16 versions (3-4 s there) let 155 versions pile up for keepRecent 100.
  const superseded = (plan: PrunePlan): void => {
    const newer = slots.get(AUTO_TARGET);
    if (newer <= marked) return;
    marked = newer;
    const next = step((db) => markPruned(db, newer, data.auto!.keepEvery));
    if (next.base?.version !== plan.base?.version || next.droppedSnapshots !== plan.droppedSnapshots) throw new Superseded();
  };
  try {
    prune(target, data.auto!.keepEvery, data.auto!.keepFree, () => undefined, superseded);
    reached = target;
  } catch (e) {
    if (e instanceof Superseded) return;
    // Tried again once a newer target comes: the writer's next commits.
    failedAt = target;
    if (!stopped()) port!.postMessage({ auto: target, failed: failure(e) } satisfies PruneReply);
  }
}

/** Rows of operations one values step goes through: ~40 ms of deletes alone at 1M keys, more beside a writer. */
const LEAVES_ROWS_A_STEP = 4_000;

type Progress = (done: number, total: number, phase: string) => void;

/**
 * One prune, whole, its steps in order (see pruner.ts). Each step can be repeated after a crash or a stop: nothing a
 * kept version needs is removed before the step that makes it unnecessary has committed.
 */
function prune(
  upTo: number,
  keepEvery: number | undefined,
  keepFree: number,
  onProgress: Progress,
  superseded: (plan: PrunePlan) => void = () => undefined,
): PruneResult {
  const before = databaseBytes(data.file);
  const plan = step((db) => markPruned(db, upTo, keepEvery));
  onProgress(1, 5, "versions");
  try {
    return removeRows(plan, before, keepFree, onProgress, () => superseded(plan));
  } catch (e) {
    throw e instanceof Superseded ? e : cutShort(e, plan);
  }
}

/**
 * A failure after the prune's first step, told as it is: the versions are gone already (readers get VERSION_PRUNED),
 * and what they leave behind is removed by the next prune (each step can be repeated).
 */
function cutShort(e: unknown, plan: PrunePlan): unknown {
  if (!(e instanceof IavlError) || e.code === "CLOSED") return e;
  const what = plan.removed === 0 ? "no version was removed" : `${plan.removed} version(s) before ${plan.keepFrom} were removed`;
  return new IavlError(e.code, `the prune stopped part-way: ${what}, then ${e.message.replace(/; nothing of it was stored$/, "")}; the next prune removes the rows they left`, { cause: e });
}

/**
 * The prune's steps after the first: the rows no kept version reads, then the space they took. `superseded` runs
 * between transactions whose progress is recorded in the store (not within a sweep, whose place is not), and may end
 * it.
 */
function removeRows(plan: PrunePlan, before: number, keepFree: number, onProgress: Progress, superseded: () => void): PruneResult {
  const through = plan.base?.version;
  if (through !== undefined) {
    // Branches and pages no tree from the base on holds, first: a checkpoint's tree is ~10 % of the store's bytes,
    // and after the values it waited for a prune that got through them (each automatic prune gives way to a newer
    // target), which under a steady churn came ~100 versions late and kept a whole tree more on disk. A dropped
    // snapshot's are found again among those it kept.
    let after = plan.droppedSnapshots ? 0 : undefined;
    while ((after = step((db) => pruneBranches(db, through, plan.snapshots, after))) !== undefined) {
      onProgress(2, 5, "branches");
      if (!plan.droppedSnapshots) superseded();
    }
    // Rows superseded at or before the version replays start from are dead: a few thousand a transaction, all on one
    // connection, whose cache stays warm (a connection a transaction took ~10 % longer).
    step((db, checkStop) => {
      while (!pruneLeaves(db, through, plan.keepFrom, plan.snapshots, LEAVES_ROWS_A_STEP)) {
        onProgress(3, 5, "values");
        checkStop();
        superseded();
      }
    });
    if (plan.droppedSnapshots) {
      const bounds = [...plan.snapshots, through];
      const kept = (v: number): boolean => v >= plan.keepFrom || plan.snapshots.includes(v);
      let from: Uint8Array | undefined;
      do {
        from = step((db, checkStop) => {
          let at = from;
          for (let page = 0; page < 8 && (at = sweepLeaves(db, through, at, (rows) => deadRows(rows, bounds, kept))) !== undefined; page++) checkStop();
          return at;
        });
        onProgress(3, 5, "values of dropped snapshots");
      } while (from !== undefined);
      step(snapshotsSwept);
    }
  }
  if (plan.compactThrough >= 0) step((db, checkStop) => copySurvivors(db, plan, (n) => onProgress(3, 5, `survivors (${n} nodes)`), checkStop));
  const droppedShards = step((db) => swapShards(db, plan));
  onProgress(4, 5, "shards");
  while (step((db) => reclaim(db, data.ownWal, undefined, keepFree)) > 0) onProgress(4, 5, "reclaim");
  onProgress(5, 5, "done");
  return {
    pruned: plan.removed,
    keptFrom: plan.keepFrom,
    // The database file alone: the WAL holds this prune's writes (up to its size limit) until the next commits reuse
    // it or a close removes it, so counting it made a prune that shrank the file by a third report nothing.
    reclaimedBytes: Math.max(0, before - databaseBytes(data.file)),
    droppedShards,
  };
}

/** Runs one step on a connection of its own, unless the owner asked to stop. */
function step<T>(fn: (db: Connection, checkStop: () => void) => T): T {
  const checkStop = (): void => {
    if (stopped()) throw new IavlError("CLOSED", "the store was closed during the prune; it is safe to run it again");
  };
  // The task counted itself in ACTIVE when it began: a closing owner waits for it, or it stops here.
  checkStop();
  const db = openWriter(data.file, "normal", data.busyTimeoutMs);
  // Each transaction first keeps the WAL bounded (when the store checkpoints its own), then waits while a commit is
  // waiting or running (at most a busy timeout, then SQLite's own wait).
  yieldBeforeWrites(db, () => {
    if (data.ownWal) paceWal(db, data.file);
    turn.yieldToOwner(data.busyTimeoutMs);
  });
  try {
    return fn(db, checkStop);
  } finally {
    db.close();
  }
}

// Last, once every import above has loaded: the owner may terminate this thread from now on (see LOADED).
slots.set(LOADED, 1);
slots.wake(LOADED);
