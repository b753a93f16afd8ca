/**
 * The lifecycle simulator's fixed seeds (sim/): each runs one whole random life of a store (writes, commits in every
 * durability, prunes, reopens, rollbacks, readers and change streams held across it all, export and import, a child
 * writer killed with SIGKILL) and checks it against the model after every step. `npm run simulate` runs fresh seeds.
 */
import { describe, expect, it } from "vitest";
import { drawLife } from "../sim/life.js";
import { drawMultiLife } from "../sim/multi-life.js";
import { runMultiLife } from "../sim/multi-runner.js";
import { runLife } from "../sim/runner.js";

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
];

/** Lives run on every change: a spread of options (checkpoint intervals, keepRecent/keepEvery, tiny budgets, shards). */
const FIXED = [2, 4, 6, 13, 22];

describe("lifecycle simulator", () => {
  for (const seed of [...FOUND, ...FIXED]) {
    it(`life of seed ${seed}`, { timeout: 180_000 }, async () => {
      const stats = await runLife(drawLife(seed, { crash: true, cli: seed === 22 }));
      expect(stats.steps).toBeGreaterThan(0);
    });
  }
});

/**
 * Multi-store lives (sim/multi-*.ts): stores added on reopen, prunes, rollbacks of the folder and of one store alone,
 * a lost commit marker, readers beside it all, and a child MultiTree writer killed with SIGKILL during commits or
 * inside MultiTree.rollback (where a kill lands depends on timing). 146: a kill armed at the child's rollback, a
 * store rolled back alone, a store added; 807: a killed child writer, then the CLI's info and verify on the folder
 * as the kill left it, and its rollback (refused beside the writer first); 2517: keepRecent with keepEvery snapshots
 * on one-version shards, the CLI's prune (refused beside the writer first).
 */
const MULTI = [146, 807, 2517];
const MULTI_CLI = [807, 2517];

describe("lifecycle simulator, multi-store folders", () => {
  for (const seed of MULTI) {
    it(`multi-store life of seed ${seed}`, { timeout: 180_000 }, async () => {
      const stats = await runMultiLife(drawMultiLife(seed, { crash: true, cli: MULTI_CLI.includes(seed) }));
      expect(stats.steps).toBeGreaterThan(0);
    });
  }
});
