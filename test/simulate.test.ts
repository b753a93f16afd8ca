/**
 * The lifecycle simulator's fixed seeds (sim/): each runs one whole random life of a store (writes, commits in every
 * durability, prunes, reopens, rollbacks, readers and change streams held across it all, export and import, a child
 * writer killed with SIGKILL) and checks it against the model after every step. `npm run simulate` runs fresh seeds.
 */
import { describe, expect, inject, it } from "vitest";
import { drawLife } from "../sim/life.js";
import { runLife } from "../sim/runner.js";

// The lives run the CLI from the package built for this run (sim/cli-command.ts).
process.env["IAVLITE_CLI"] = inject("cli");

/** Seeds that found a defect, each kept as a test of its own, with what it found. */
const FOUND = [
  // An explicit prune cut short by close() rejected with piscina's "Terminating worker thread", not CLOSED.
  1,
  // A read-only change stream made before a rollback that took its versions threw VERSION_NOT_FOUND at them (its
  // rollback count was read at its first step, after the rollback), not VERSION_ROLLED_BACK.
  14,
  // A sweep (snapshots dropped) deleted the removal rows of kept versions, so changes() lost their removals; and a
  // prune to an older point than an earlier one moved the replay base back onto deleted operations (CORRUPT).
  2712176896,
  // A change stream of a read-only handle closed meanwhile threw better-sqlite3's TypeError, not CLOSED.
  1288740864,
  // A prune whose replay base was a kept version (the latest, checkpointed at close) left an older base recorded,
  // naming a tree whose branch rows that prune deleted (the end-of-life check of stored branches found it).
  1171428352,
];

/** Lives run on every change: a spread of options (checkpoint intervals, keepRecent/keepEvery, tiny budgets, shards). */
const FIXED = [2, 4, 6, 13, 22];

/** Lives with damaged copies of the store among their steps (their reads must be right or refused). */
const DAMAGED = [103];

/**
 * Lives with full disks among their steps (a child writer's files limited, then not). Seed 354 found that an async
 * version retried once space was back had lost its shard's branch table, made by the transaction the disk refused
 * (the writer still counted it made: "no such table: branch_117"). Seed 2136344192 found that a keepEvery snapshot's
 * checkpoint, spread over commits, was lost to a kill before its last step, and the next prune dropped the snapshot
 * (the kill's moment is timed, so the life does not always meet it: test/checkpoint-steps.test.ts checks the cause).
 */
const FULL = [354, 2136344192];

/**
 * Lives that start from a store layout-2 code wrote (test/fixtures/sim-layout2), taken into pages by their first open.
 * Seed 15 found that the simulator's model expected the keepEvery snapshots of versions that store's writer never made.
 */
const UPGRADED = [15, 16];

/**
 * Lives drawn as `npm run simulate` draws them, every kind on. 2861632512 (checkpointInterval 15, upgraded, a copy
 * damaged in a block of its main file): a read-only handle's `at()` let SQLite's "database disk image is malformed"
 * escape from the read of the version's row, where it must say CORRUPT.
 */
const ALL_KINDS = [2861632512];

describe("lifecycle simulator", () => {
  for (const seed of [...FOUND, ...FIXED, ...DAMAGED, ...FULL, ...UPGRADED]) {
    it(`life of seed ${seed}`, { timeout: 180_000 }, async () => {
      const kinds = { crash: true, cli: seed === 22, damage: DAMAGED.includes(seed), full: FULL.includes(seed), upgraded: UPGRADED.includes(seed) };
      const life = drawLife(seed, kinds);
      expect(life.options.upgraded === true).toBe(UPGRADED.includes(seed));
      const stats = await runLife(life);
      expect(stats.steps).toBeGreaterThan(0);
    });
  }
  for (const seed of ALL_KINDS) {
    it(`life of seed ${seed}, every kind`, { timeout: 180_000 }, async () => {
      const life = drawLife(seed, { crash: true, cli: true, damage: true, full: true, upgraded: true, spread: true });
      const stats = await runLife(life);
      expect(stats.steps).toBeGreaterThan(0);
    });
  }
});
