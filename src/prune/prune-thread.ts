/**
 * The prune worker (run by piscina): each task is one step of a prune on a connection of its own, opened for the
 * step and closed after it, so that the writer's thread only waits for the database, never for the work, and a
 * closing store can tell when no step holds its file.
 * @module
 */
import type { MessagePort } from "node:worker_threads";
import { IavlError, type ErrorCode } from "../base/errors.js";
import { openWriter, type Connection } from "../sqlite/connection.js";
import { markPruned, pruneLeaves, reclaim, sweepLeaves, swapShards, type PrunePlan } from "../sqlite/prune-rows.js";
import { deadRows } from "./plan.js";
import { copySurvivors } from "./survivors.js";

/** Slots of a pruner's control block (Int32): set to stop every step at its next boundary, … */
export const STOP = 0;
/** … and the number of steps holding a connection. */
export const ACTIVE = 1;

/** What every task carries. */
interface TaskBase {
  file: string;
  busyTimeoutMs: number;
  /** The pruner's control block: {@link STOP}, {@link ACTIVE}. */
  control: SharedArrayBuffer;
}

/** One task: a step and its arguments. */
export type PruneTask = TaskBase &
  (
    | { step: "mark"; upTo: number; keepEvery: number | undefined }
    | { step: "leaves"; through: number; keepFrom: number; snapshots: number[]; versions: number }
    | { step: "sweep"; through: number; snapshots: number[]; from: Uint8Array | undefined; pages: number }
    | { step: "copy"; plan: PrunePlan; progress?: MessagePort }
    | { step: "swap"; plan: PrunePlan }
    | { step: "reclaim"; slices: number; keepFree: number }
  );

/**
 * A step's failure as it crosses back to the owner: errors lose their class and code between threads, so they
 * travel as data.
 */
export interface StepFailure {
  failed: { code: ErrorCode | undefined; message: string };
}

/** Runs one step (see {@link PruneTask}); a failure is returned as a {@link StepFailure}. */
export default function run(task: PruneTask): unknown {
  try {
    return guarded(task);
  } catch (e) {
    const failure: StepFailure = { failed: { code: e instanceof IavlError ? e.code : undefined, message: (e as Error).message } };
    return failure;
  }
}

function guarded(task: PruneTask): unknown {
  const control = new Int32Array(task.control);
  Atomics.add(control, ACTIVE, 1);
  try {
    const checkStop = (): void => {
      if (Atomics.load(control, STOP) !== 0) throw new IavlError("CLOSED", "the store was closed during the prune; it is safe to run it again");
    };
    // Checked after counting this step as active, so that a closing owner either waits for it or it never opens.
    checkStop();
    const db = openWriter(task.file, "normal", task.busyTimeoutMs);
    try {
      return step(db, task, checkStop);
    } finally {
      db.close();
    }
  } finally {
    Atomics.sub(control, ACTIVE, 1);
    Atomics.notify(control, ACTIVE);
  }
}

function step(db: Connection, task: PruneTask, checkStop: () => void): unknown {
  switch (task.step) {
    case "mark":
      return markPruned(db, task.upTo, task.keepEvery);
    case "leaves":
      return pruneLeaves(db, task.through, task.keepFrom, task.snapshots, task.versions);
    case "sweep": {
      const bounds = [...task.snapshots, task.through];
      let from = task.from;
      for (let i = 0; i < task.pages; i++) {
        from = sweepLeaves(db, task.through, from, (rows) => deadRows(rows, bounds));
        if (from === undefined) return { done: true };
        checkStop();
      }
      return { done: false, from };
    }
    case "copy":
      try {
        copySurvivors(db, task.plan, (n) => task.progress?.postMessage(n), checkStop);
      } finally {
        task.progress?.close();
      }
      return null;
    case "swap":
      swapShards(db, task.plan);
      return null;
    case "reclaim": {
      let free = 0;
      for (let i = 0; i < task.slices; i++) {
        if ((free = reclaim(db, undefined, task.keepFree)) === 0) break;
        checkStop();
      }
      return free;
    }
  }
}
