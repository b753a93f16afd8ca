/**
 * A life of a store as data: its options and its steps, all drawn from one seed. Steps name what to do, not the
 * versions to do it to (those are resolved against the store's state when the step runs), so that a shrunk life,
 * with steps left out, still runs.
 * @module
 */
import type { OpenOptions } from "../src/index.js";
import { KEYS, type Op } from "./model.js";
import { Random } from "./random.js";

export type Durability = "normal" | "full" | "async";

/** Options of a life's store (fixed for the life, but for durability, which each reopen may change). */
export interface LifeOptions {
  checkpointInterval: number;
  keepRecent: number | undefined;
  keepEvery: number | undefined;
  memoryBudgetMiB: number | undefined;
  shardSize: number;
  initialVersion: number;
  durability: Durability;
  /** Starts from a copy of a store layout-2 code wrote (test/fixtures/sim-layout2), upgraded by the first open. */
  upgraded?: boolean;
  /** The fewest rows a checkpoint step writes: small, a life's small trees have checkpoints spread over commits. */
  checkpointStepRows?: number;
}

/** The options `Tree.open` takes for a life's store, with `durability` (each reopen may change it). */
export function openOptions(o: LifeOptions, durability: Durability): OpenOptions {
  return {
    checkpointInterval: o.checkpointInterval,
    keepRecent: o.keepRecent ?? undefined,
    keepEvery: o.keepEvery ?? undefined,
    memoryBudgetMiB: o.memoryBudgetMiB ?? undefined,
    shardSize: o.shardSize,
    initialVersion: o.initialVersion,
    durability,
    checkpointStepRows: o.checkpointStepRows,
  };
}

/** A fraction in [0, 1) that picks among what exists when the step runs. */
type Pick = number;

export type Step =
  | { t: "write"; ops: Op[] }
  | { t: "clear" }
  | { t: "commit" }
  /** Commits in a loop that never yields to the event loop, as a chain replaying blocks does. */
  | { t: "burst"; versions: Op[][] }
  | { t: "flush" }
  | { t: "tick"; n: number }
  | { t: "prune"; pick: Pick; keepEvery: boolean; wait: boolean }
  | { t: "settle" }
  | { t: "reopen"; durability: Durability }
  | { t: "rollback"; pick: Pick }
  | { t: "reader"; slot: number; action: "open" | "refresh" | "read" | "close" }
  | { t: "view"; slot: number; from: "writer" | "reader"; pick: Pick }
  | { t: "view-read"; slot: number; pick: Pick }
  | { t: "stream"; slot: number; from: Pick; span: number }
  | { t: "stream-step"; slot: number; n: number }
  | { t: "export"; pick: Pick }
  | { t: "crash"; seed: number; versions: number; killAfterMs: number; prune: boolean }
  | { t: "cli" }
  /** With the writer closed, an operator's `iavlite rollback --yes` or `iavlite prune`. */
  | { t: "cli-op"; rollback: boolean; pick: Pick; keepEvery: boolean }
  /** `iavlite import` of an export of a kept version into a new folder, killed with SIGKILL after `killAfterMs`. */
  | { t: "crash-import"; pick: Pick; killAfterMs: number }
  /** A read-only handle in another process, reading for `ms` while this one goes on; checked at the next settle. */
  | { t: "reader-process"; ms: number }
  /** A copy of the store with `kind` damage in its main file or WAL, read where the model says what is right. */
  | { t: "damage"; seed: number; wal: boolean; kind: "block" | "byte" }
  /**
   * A child writer whose files may grow only `slack` bytes past the largest of them: it commits its seed's versions,
   * the disk refuses one, space comes back, and it goes on with the same handle.
   */
  | { t: "full"; seed: number; versions: number; slack: number }
  | { t: "check" };

/** A whole life. */
export interface Life {
  seed: number;
  options: LifeOptions;
  steps: Step[];
}

/** What kinds of steps a life may draw (the test suite leaves out the slow ones). */
export interface LifeKinds {
  /** Child-process writers killed with SIGKILL. */
  crash: boolean;
  /** The CLI run as an operator would, in a child process. */
  cli: boolean;
  /** Copies of the store damaged on disk (main file or WAL), whose every read must be right or refused. */
  damage?: boolean;
  /** A writer whose disk fills, then has space again. */
  full?: boolean;
  /** Some lives start from a store layout-2 code wrote (a fixture), upgraded by their first open. */
  upgraded?: boolean;
  /**
   * Some lives write each checkpoint over several commits, as large trees do: a life's tree of at most 48 keys has
   * fewer rows than a step's default 256, so its checkpoints would otherwise end in the commit that begins them.
   */
  spread?: boolean;
}

const SLOTS = 3;

/** A value of a drawn size: empty now and then, mostly small, sometimes a few KB. */
export function drawValue(r: Random): Uint8Array {
  const size = r.weighted<number>([
    [0, 1],
    [r.int(1, 64), 8],
    [r.int(1000, 5000), 1],
  ]);
  return r.bytes(size);
}

function ops(r: Random, n: number): Op[] {
  const out: Op[] = [];
  for (let i = 0; i < n; i++) out.push({ k: r.int(0, KEYS - 1), v: r.chance(0.25) ? null : drawValue(r) });
  return out;
}

function durability(r: Random): Durability {
  return r.weighted<Durability>([
    ["normal", 5],
    ["full", 1],
    ["async", 3],
  ]);
}

/** Draws the life of `seed`. */
export function drawLife(seed: number, kinds: LifeKinds, maxSteps = 220): Life {
  const r = new Random(seed);
  const keepRecent = r.chance(0.6) ? r.int(1, 25) : undefined;
  const options: LifeOptions = {
    checkpointInterval: r.int(1, 20),
    keepRecent,
    keepEvery: r.chance(0.5) ? r.int(1, 20) : undefined,
    memoryBudgetMiB: r.chance(0.3) ? 8 : undefined,
    shardSize: r.pick([1, 2, 3, 5, 10, 1000]),
    initialVersion: r.chance(0.2) ? r.int(2, 90) : 1,
    durability: durability(r),
  };
  const steps: Step[] = [];
  const count = r.int(Math.floor(maxSteps / 3), maxSteps);
  type Kind = Step["t"];
  const weights: Array<readonly [Kind, number]> = [
    ["write", 30],
    ["clear", 1],
    ["commit", 25],
    ["burst", 3],
    ["flush", 2],
    ["tick", 6],
    ["prune", 4],
    ["settle", 2],
    ["reopen", 3],
    ["rollback", 2],
    ["reader", 5],
    ["view", 4],
    ["view-read", 5],
    ["stream", 2],
    ["stream-step", 4],
    ["export", 1],
    ["check", 3],
    ...(kinds.crash ? ([["crash", 1.5]] as const) : []),
    ...(kinds.cli ? ([["cli", 0.5], ["cli-op", 0.5]] as const) : []),
    ...(kinds.crash ? ([["crash-import", 0.4], ["reader-process", 0.8]] as const) : []),
    // Last, so that the lives of seeds drawn before it existed are unchanged.
    ...(kinds.damage === true ? ([["damage", 1.5]] as const) : []),
    ...(kinds.full === true ? ([["full", 1]] as const) : []),
  ];
  for (let i = 0; i < count; i++) {
    const slot = r.int(0, SLOTS - 1);
    switch (r.weighted(weights)) {
      case "write":
        steps.push({ t: "write", ops: ops(r, r.weighted<number>([[r.int(1, 5), 6], [r.int(6, 40), 3], [r.int(100, 300), 1]])) });
        break;
      case "clear":
        steps.push({ t: "clear" });
        break;
      case "commit":
        steps.push({ t: "commit" });
        break;
      case "burst": {
        const versions: Op[][] = [];
        for (let v = r.int(5, 60); v > 0; v--) versions.push(ops(r, r.int(0, 6)));
        steps.push({ t: "burst", versions });
        break;
      }
      case "flush":
        steps.push({ t: "flush" });
        break;
      case "tick":
        steps.push({ t: "tick", n: r.int(1, 20) });
        break;
      case "prune":
        steps.push({ t: "prune", pick: r.next(), keepEvery: r.chance(0.7), wait: r.chance(0.5) });
        break;
      case "settle":
        steps.push({ t: "settle" });
        break;
      case "reopen":
        steps.push({ t: "reopen", durability: r.chance(0.7) ? options.durability : durability(r) });
        break;
      case "rollback":
        steps.push({ t: "rollback", pick: r.next() });
        break;
      case "reader":
        steps.push({ t: "reader", slot, action: r.pick(["open", "open", "refresh", "read", "read", "close"] as const) });
        break;
      case "view":
        steps.push({ t: "view", slot, from: r.chance(0.5) ? "writer" : "reader", pick: r.next() });
        break;
      case "view-read":
        steps.push({ t: "view-read", slot, pick: r.next() });
        break;
      case "stream":
        steps.push({ t: "stream", slot, from: r.next(), span: r.int(1, 30) });
        break;
      case "stream-step":
        steps.push({ t: "stream-step", slot, n: r.int(1, 10) });
        break;
      case "export":
        steps.push({ t: "export", pick: r.next() });
        break;
      case "crash":
        steps.push({ t: "crash", seed: r.int(1, 2 ** 31), versions: r.int(2, 40), killAfterMs: r.int(0, 1500), prune: r.chance(0.4) });
        break;
      case "cli":
        steps.push({ t: "cli" });
        break;
      case "cli-op":
        steps.push({ t: "cli-op", rollback: r.chance(0.5), pick: r.next(), keepEvery: r.chance(0.5) });
        break;
      case "crash-import":
        steps.push({ t: "crash-import", pick: r.next(), killAfterMs: r.int(0, 1500) });
        break;
      case "reader-process":
        steps.push({ t: "reader-process", ms: r.int(100, 1500) });
        break;
      case "check":
        steps.push({ t: "check" });
        break;
      case "damage":
        steps.push({ t: "damage", seed: r.int(1, 2 ** 31), wal: r.chance(0.5), kind: r.chance(0.5) ? "block" : "byte" });
        break;
      case "full":
        steps.push({ t: "full", seed: r.int(1, 2 ** 31), versions: r.int(5, 60), slack: r.pick([0, 4096, 16384, 65536]) });
        break;
    }
  }
  steps.push({ t: "settle" }, { t: "check" });
  // Drawn apart, so that the lives of seeds drawn before it existed are unchanged; the fixture's history starts at 1.
  if (kinds.upgraded === true && new Random(seed ^ 0x1a7e2).chance(0.35)) Object.assign(options, { upgraded: true, initialVersion: 1 });
  const spread = new Random(seed ^ 0x5b7ead);
  if (kinds.spread === true && spread.chance(0.5)) options.checkpointStepRows = spread.int(1, 6);
  return { seed, options, steps };
}

/** The operations a crash child commits for its version number `i`: drawn from its own seed, so both sides agree. */
export function childOps(seed: number, versions: number): Op[][] {
  const r = new Random(seed);
  const out: Op[][] = [];
  for (let i = 0; i < versions; i++) out.push(ops(r, r.int(1, 12)));
  return out;
}

/** A step's fields after its kind, as `name=value` words, for logs and shrunk reports. */
export function stepArgs(s: { t: string }): string {
  const { t, ...rest } = s;
  const args = Object.entries(rest).map(([k, v]) => `${k}=${typeof v === "number" && !Number.isInteger(v) ? v.toFixed(3) : String(v)}`);
  return [t, ...args].join(" ");
}
