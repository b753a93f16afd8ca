/**
 * The lifecycle simulator's fixed multi-store seeds, in a file of their own so that they run beside the single-store
 * ones (simulate.test.ts).
 */
import { describe, expect, inject, it } from "vitest";
import { drawMultiLife } from "../sim/multi-life.js";
import { runMultiLife } from "../sim/multi-runner.js";

// The lives run the CLI from the package built for this run (sim/cli-command.ts).
process.env["IAVLITE_CLI"] = inject("cli");

/**
 * Multi-store lives (sim/multi-*.ts): stores added on reopen, prunes, rollbacks of the folder and of one store alone,
 * a lost commit marker, readers beside it all, and a child MultiTree writer killed with SIGKILL during commits or
 * inside MultiTree.rollback (where a kill lands depends on timing). 146: a kill armed at the child's rollback, a
 * store rolled back alone, a store added; 807: a killed child writer, then the CLI's info and verify on the folder
 * as the kill left it, and its rollback (refused beside the writer first); 2517: keepRecent with keepEvery snapshots
 * on one-version shards, the CLI's prune (refused beside the writer first); 1518313472: an automatic prune cut short
 * by a close in one store while another store, never pruned, keeps version 1 (the end check then pruned no store and
 * found the first one's rows left behind, in about half of its lives: sim-finish-prunes.test.ts is the exact case).
 * 1595783168 (drawn as `npm run simulate` draws, every kind on): the CLI's prune --keep-recent below the stores'
 * oldest version, which automatic prunes had taken, prunes to just before it and so forgets the app hashes of the
 * versions no store keeps; the model had expected them kept down to its own target. 1585295872 (drawn the same way):
 * keepRecent 2 with keepEvery 10, an explicit prune with keepEvery 12 not awaited, then the CLI's prune
 * --keep-recent 8: the model took the oldest version from the stores' keptFrom, which is past the keepEvery snapshot
 * the CLI's prune keeps, and so held version 30 removed.
 */
const MULTI = [146, 807, 2517, 1518313472];
const MULTI_CLI = [807, 2517, 1518313472];
const ALL_KINDS = [1595783168, 1585295872];

describe("lifecycle simulator, multi-store folders", () => {
  for (const seed of MULTI) {
    it(`multi-store life of seed ${seed}`, { timeout: 180_000 }, async () => {
      const stats = await runMultiLife(drawMultiLife(seed, { crash: true, cli: MULTI_CLI.includes(seed) }));
      expect(stats.steps).toBeGreaterThan(0);
    });
  }
  for (const seed of ALL_KINDS) {
    it(`multi-store life of seed ${seed}, every kind`, { timeout: 180_000 }, async () => {
      const kinds = { crash: true, cli: true, damage: true, full: true, upgraded: true, spread: true };
      const stats = await runMultiLife(drawMultiLife(seed, kinds));
      expect(stats.steps).toBeGreaterThan(0);
    });
  }
});
