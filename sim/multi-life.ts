/**
 * A life of a multi-store folder (`MultiTree`) as data: its options and its steps, all drawn from one seed. As in
 * life.ts, steps name what to do, not versions or stores: a store is a number taken modulo the stores the folder has
 * when the step runs, a version a fraction of what exists then, so that a shrunk life, with steps left out, still runs.
 * @module
 */
import { drawValue, stepArgs } from "./life.js";
import { KEYS } from "./model.js";
import { Random } from "./random.js";

/** The durabilities a MultiTree accepts (a version is whole only once every store's commit is on disk). */
export type MultiDurability = "normal" | "full";

/** Names a folder's stores are drawn from, in the order they join. */
export const STORE_NAMES = ["bank", "acc", "staking", "gov.v1"] as const;

/** Options of a life's folder (fixed for the life, but for durability, which each reopen may change). */
export interface MultiOptions {
  /** The stores the folder begins with; reopens may add the next names of {@link STORE_NAMES}. */
  stores: number;
  checkpointInterval: number;
  keepRecent: number | undefined;
  keepEvery: number | undefined;
  memoryBudgetMiB: number | undefined;
  shardSize: number;
  durability: MultiDurability;
}

/** A set (`v` the value) or removal (`v` null) of key `k` in store number `s` (modulo the stores there are). */
export interface MultiOp {
  s: number;
  k: number;
  v: Uint8Array | null;
}

/** A fraction in [0, 1) that picks among what exists when the step runs. */
type Pick = number;

export type MultiStep =
  | { t: "write"; ops: MultiOp[] }
  | { t: "commit" }
  | { t: "burst"; versions: MultiOp[][] }
  | { t: "tick"; n: number }
  /** `MultiTree.prune`; keepEvery "open" passes none (the open option applies), "other" passes `other`. */
  | { t: "prune"; pick: Pick; keepEvery: "open" | "other"; other: number; wait: boolean }
  | { t: "settle" }
  | { t: "reopen"; durability: MultiDurability; add: boolean }
  /** `MultiTree.rollback` with the writer closed; `bad` first tries a version it must refuse. */
  | { t: "rollback"; pick: Pick; bad: boolean }
  /** One store rolled back alone (`Tree.rollback`): open must refuse the folder, `MultiTree.rollback` repair it. */
  | { t: "store-rollback"; pick: Pick; store: number }
  /** The commit marker's files deleted with the writer closed: open rebuilds it from the stores. */
  | { t: "lose-marker" }
  | { t: "reader"; slot: number; action: "open" | "refresh" | "read" | "close"; pick: Pick }
  | { t: "view"; slot: number; from: "writer" | "reader"; pick: Pick }
  | { t: "view-read"; slot: number }
  | { t: "app-hash"; pick: Pick }
  /**
   * A child-process writer commits `versions` versions (with `rollbackAt` ≥ 0 it closes after that many, rolls the
   * folder back to a kept version picked by `rollbackPick`, reopens and goes on) and is killed with SIGKILL
   * `killAfterMs` after it opened, or after it announced its rollback (`killAt` "rollback"). With `relapse` ≥ 0 a
   * second child opens the folder as the kill left it (recovering it) and is killed `relapse` ms after it started.
   * With `inspect`, an operator runs `iavlite info` and `verify --all` on the folder as the kills left it.
   */
  | {
      t: "crash";
      seed: number;
      versions: number;
      prune: boolean;
      rollbackAt: number;
      rollbackPick: Pick;
      killAt: "opened" | "rollback";
      killAfterMs: number;
      relapse: number;
      inspect: boolean;
    }
  /** The CLI in a child process: `inspect` runs info and verify beside the writer; `beside` first tries prune/rollback with the writer open. */
  | { t: "cli"; cmd: "inspect" | "prune" | "rollback"; pick: Pick; keep: number; beside: boolean }
  | { t: "check" };

/** A whole multi-store life. */
export interface MultiLife {
  seed: number;
  options: MultiOptions;
  steps: MultiStep[];
}

/** What kinds of steps a life may draw (the slow ones can be left out). */
export interface MultiKinds {
  crash: boolean;
  cli: boolean;
}

const SLOTS = 3;

function ops(r: Random, n: number): MultiOp[] {
  const out: MultiOp[] = [];
  for (let i = 0; i < n; i++) out.push({ s: r.int(0, STORE_NAMES.length - 1), k: r.int(0, KEYS - 1), v: r.chance(0.25) ? null : drawValue(r) });
  return out;
}

/**
 * Draws the multi-store life of `seed`: shorter than a single store's, since each step touches every store and
 * every close of the writer costs ~0.1 s a store.
 */
export function drawMultiLife(seed: number, kinds: MultiKinds, maxSteps = 100): MultiLife {
  const r = new Random(seed ^ 0x3a17);
  const options: MultiOptions = {
    stores: r.int(2, 3),
    checkpointInterval: r.int(1, 20),
    keepRecent: r.chance(0.6) ? r.int(1, 25) : undefined,
    keepEvery: r.chance(0.5) ? r.int(1, 20) : undefined,
    memoryBudgetMiB: r.chance(0.3) ? 8 : undefined,
    shardSize: r.pick([1, 2, 3, 5, 10, 1000]),
    durability: r.chance(0.75) ? "normal" : "full",
  };
  const steps: MultiStep[] = [];
  const count = r.int(Math.floor(maxSteps / 3), maxSteps);
  type Kind = MultiStep["t"];
  const weights: Array<readonly [Kind, number]> = [
    ["write", 30],
    ["commit", 25],
    ["burst", 3],
    ["tick", 4],
    ["prune", 4],
    ["settle", 2],
    ["reopen", 3],
    ["rollback", 2],
    ["store-rollback", 0.5],
    ["lose-marker", 0.5],
    ["reader", 7],
    ["view", 3],
    ["view-read", 4],
    ["app-hash", 3],
    ["check", 3],
    ...(kinds.crash ? ([["crash", 1.2]] as const) : []),
    ...(kinds.cli ? ([["cli", 0.5]] as const) : []),
  ];
  for (let i = 0; i < count; i++) {
    const slot = r.int(0, SLOTS - 1);
    switch (r.weighted(weights)) {
      case "write":
        steps.push({ t: "write", ops: ops(r, r.weighted<number>([[r.int(1, 6), 6], [r.int(7, 40), 3], [r.int(100, 200), 1]])) });
        break;
      case "commit":
        steps.push({ t: "commit" });
        break;
      case "burst": {
        const versions: MultiOp[][] = [];
        for (let v = r.int(5, 40); v > 0; v--) versions.push(ops(r, r.int(0, 8)));
        steps.push({ t: "burst", versions });
        break;
      }
      case "tick":
        steps.push({ t: "tick", n: r.int(1, 20) });
        break;
      case "prune":
        steps.push({ t: "prune", pick: r.next(), keepEvery: r.chance(0.7) ? "open" : "other", other: r.int(1, 20), wait: r.chance(0.5) });
        break;
      case "settle":
        steps.push({ t: "settle" });
        break;
      case "reopen":
        steps.push({ t: "reopen", durability: r.chance(0.7) ? options.durability : r.pick(["normal", "full"] as const), add: r.chance(0.25) });
        break;
      case "rollback":
        steps.push({ t: "rollback", pick: r.next(), bad: r.chance(0.3) });
        break;
      case "store-rollback":
        steps.push({ t: "store-rollback", pick: r.next(), store: r.int(0, STORE_NAMES.length - 1) });
        break;
      case "lose-marker":
        steps.push({ t: "lose-marker" });
        break;
      case "reader":
        steps.push({ t: "reader", slot, action: r.pick(["open", "open", "refresh", "read", "read", "read", "close"] as const), pick: r.next() });
        break;
      case "view":
        steps.push({ t: "view", slot, from: r.chance(0.5) ? "writer" : "reader", pick: r.next() });
        break;
      case "view-read":
        steps.push({ t: "view-read", slot });
        break;
      case "app-hash":
        steps.push({ t: "app-hash", pick: r.next() });
        break;
      case "crash": {
        const rollback = r.chance(0.4);
        steps.push({
          t: "crash",
          seed: r.int(1, 2 ** 31),
          versions: r.int(4, 60),
          prune: r.chance(0.4),
          rollbackAt: rollback ? r.int(1, 12) : -1,
          rollbackPick: r.next(),
          killAt: rollback && r.chance(0.6) ? "rollback" : "opened",
          killAfterMs: r.int(0, 700),
          relapse: r.chance(0.3) ? r.int(300, 1500) : -1,
          // Drawn last, and only with the CLI, so that lives without it draw as before.
          inspect: kinds.cli && r.chance(0.3),
        });
        break;
      }
      case "cli":
        steps.push({ t: "cli", cmd: r.pick(["inspect", "prune", "rollback"] as const), pick: r.next(), keep: r.int(1, 12), beside: r.chance(0.3) });
        break;
      case "check":
        steps.push({ t: "check" });
        break;
    }
  }
  steps.push({ t: "settle" }, { t: "check" });
  return { seed, options, steps };
}

/** The operations a crash child commits, version by version: drawn from its own seed, so both sides agree. */
export function childMultiOps(seed: number, versions: number): MultiOp[][] {
  const r = new Random(seed);
  const out: MultiOp[][] = [];
  for (let i = 0; i < versions; i++) out.push(ops(r, r.int(1, 10)));
  return out;
}

/** A step in a line, for logs and shrunk reports. */
export function describeMulti(s: MultiStep): string {
  switch (s.t) {
    case "write":
      return `write ${s.ops.map((o) => `${o.s}:${o.v === null ? `-${o.k}` : `${o.k}=${o.v.length}B`}`).join(" ")}`;
    case "burst":
      return `burst of ${s.versions.length} commits`;
    default:
      return stepArgs(s);
  }
}
