/**
 * `npm run simulate -- --seed S` replays one life (printing its steps); `npm run simulate -- --minutes M` runs fresh
 * seeds for M minutes and prints the lives and steps run. A failure prints its seed and a shrunk list of steps that
 * still fails.
 * @module
 */
import { parseArgs } from "node:util";
import { drawLife, type Life } from "./life.js";
import { describe, runLife, SimFailure } from "./runner.js";
import { shrink } from "./shrink.js";

const { values } = parseArgs({
  options: {
    seed: { type: "string" },
    minutes: { type: "string" },
    steps: { type: "string", default: "220" },
    "no-crash": { type: "boolean", default: false },
    "no-cli": { type: "boolean", default: false },
    verbose: { type: "boolean", default: false },
  },
});
const kinds = { crash: !values["no-crash"], cli: !values["no-cli"] };
const maxSteps = Number(values.steps);

async function report(life: Life, e: unknown): Promise<void> {
  const at = e instanceof SimFailure ? e.step : -1;
  console.log(`FAIL seed ${life.seed} at step ${at}: ${(e as Error).message}`);
  if (!(e instanceof SimFailure)) console.log((e as Error).stack);
  console.log("shrinking…");
  const small = await shrink(life, at);
  console.log(`shrunk to ${small.life.steps.length} steps (fails with: ${small.message}):`);
  console.log(`options ${JSON.stringify(small.life.options)}`);
  small.life.steps.forEach((s, i) => console.log(`  ${i}: ${describe(s)}`));
}

if (values.seed !== undefined) {
  const life = drawLife(Number(values.seed), kinds, maxSteps);
  console.log(`seed ${life.seed}: options ${JSON.stringify(life.options)}, ${life.steps.length} steps`);
  try {
    const stats = await runLife(life, values.verbose ? (l) => console.log(l) : undefined);
    console.log(`ok: ${stats.steps} steps, ${stats.versions} versions, ${stats.checks} full checks`);
  } catch (e) {
    await report(life, e);
    process.exitCode = 1;
  }
} else {
  const until = Date.now() + Number(values.minutes ?? "1") * 60_000;
  let lives = 0;
  let steps = 0;
  let versions = 0;
  let seed = (Date.now() ^ (process.pid << 16)) >>> 0;
  while (Date.now() < until) {
    const life = drawLife(seed, kinds, maxSteps);
    try {
      const s = await runLife(life);
      lives++;
      steps += s.steps;
      versions += s.versions;
    } catch (e) {
      await report(life, e);
      process.exitCode = 1;
      break;
    }
    seed = (seed * 1103515245 + 12345) >>> 0;
  }
  console.log(`${lives} lives, ${steps} steps, ${versions} versions committed, no failure${process.exitCode === 1 ? " before the one above" : ""}`);
}
