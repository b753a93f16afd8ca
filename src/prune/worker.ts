/**
 * The prune worker (run by piscina): each task is one step of src/prune/steps.ts on the worker's own connection,
 * so that the writer's thread only waits for the database, never for the work.
 * @module
 */
import type { MessagePort } from "node:worker_threads";
import type Database from "better-sqlite3";
import { openWriter } from "../sqlite/connection.js";
import { copySurvivors, markPruned, reclaim, swapShards, trimValues, type PrunePlan } from "./steps.js";

/** One task: a step and its arguments. */
export type PruneTask =
  | { file: string; step: "mark"; upTo: number; keepEvery: number | undefined }
  | { file: string; step: "trim"; keepFrom: number; snapshots: number[]; from: Uint8Array | undefined; pages: number }
  | { file: string; step: "copy"; plan: PrunePlan; progress?: MessagePort }
  | { file: string; step: "swap"; plan: PrunePlan }
  | { file: string; step: "reclaim"; slices: number };

// One connection per worker thread and file, kept across tasks.
const connections = new Map<string, Database.Database>();

function connection(file: string): Database.Database {
  let db = connections.get(file);
  if (db === undefined) {
    db = openWriter(file, "normal");
    connections.set(file, db);
  }
  return db;
}

/** Runs one step; see {@link PruneTask}. */
export default function run(task: PruneTask): unknown {
  const db = connection(task.file);
  switch (task.step) {
    case "mark":
      return markPruned(db, task.upTo, task.keepEvery);
    case "trim": {
      let from = task.from;
      for (let i = 0; i < task.pages; i++) {
        from = trimValues(db, task.keepFrom, task.snapshots, from);
        if (from === undefined) return { done: true };
      }
      return { done: false, from };
    }
    case "copy":
      copySurvivors(db, task.plan, (n) => task.progress?.postMessage(n));
      task.progress?.close();
      return null;
    case "swap":
      swapShards(db, task.plan);
      return null;
    case "reclaim": {
      let free = 0;
      for (let i = 0; i < task.slices; i++) if ((free = reclaim(db)) === 0) break;
      return free;
    }
  }
}

/** Closes this worker's connections (piscina calls tasks only; the owner asks for this one at shutdown). */
export function closeAll(): null {
  for (const db of connections.values()) db.close();
  connections.clear();
  return null;
}
