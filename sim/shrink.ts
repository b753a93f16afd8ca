/**
 * Shrinks a failing life: drops runs of steps (halves, then quarters, … then single steps) for as long as the life
 * still fails, so that a report lists only the steps that matter.
 * @module
 */

/**
 * The smallest life found that still fails when `run` runs it (any failure counts), and its failure. Steps after
 * `at` go first. Any kind of life: a store's (runLife) or a multi-store folder's (runMultiLife).
 */
export async function shrink<L extends { steps: readonly unknown[] }>(
  life: L,
  at: number,
  run: (life: L) => Promise<unknown>,
  budget = 200,
): Promise<{ life: L; message: string }> {
  /** Runs a life; the failure's message, or undefined when it passes. */
  const failure = async (l: L): Promise<string | undefined> => {
    try {
      await run(l);
      return undefined;
    } catch (e) {
      return (e as Error).message;
    }
  };
  let best: L = at >= 0 ? { ...life, steps: life.steps.slice(0, at + 1) } : life;
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
