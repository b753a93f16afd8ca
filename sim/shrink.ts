/**
 * Shrinks a failing life: drops runs of steps (halves, then quarters, … then single steps) for as long as the life
 * still fails, so that a report lists only the steps that matter.
 * @module
 */
import type { Life } from "./life.js";
import { runLife } from "./runner.js";

/** Runs `life`; the failure's message, or undefined when it passes. */
async function failure(life: Life): Promise<string | undefined> {
  try {
    await runLife(life);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

/** The smallest life found that still fails (any failure counts), and its failure. Steps after `at` go first. */
export async function shrink(life: Life, at: number, budget = 200): Promise<{ life: Life; message: string }> {
  let best: Life = at >= 0 ? { ...life, steps: life.steps.slice(0, at + 1) } : life;
  let message = await failure(best);
  if (message === undefined) return { life, message: "(did not fail again)" };
  let runs = 0;
  for (let chunk = Math.ceil(best.steps.length / 2); chunk >= 1 && runs < budget; chunk = chunk === 1 ? 0 : Math.ceil(chunk / 2)) {
    for (let i = 0; i < best.steps.length && runs < budget; ) {
      const steps = [...best.steps.slice(0, i), ...best.steps.slice(i + chunk)];
      runs++;
      const m = await failure({ ...best, steps });
      if (m !== undefined) {
        best = { ...best, steps };
        message = m;
      } else i += chunk;
    }
  }
  return { life: best, message };
}
