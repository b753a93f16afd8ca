/**
 * `npm run simulate -- --seed S` replays one life (printing its steps); `npm run simulate -- --minutes M` runs fresh
 * seeds for M minutes (every third life a multi-store life) and prints the lives and steps run. `--multi` makes every
 * life a multi-store life (sim/multi-*.ts). A failure prints its seed and a shrunk list of steps that still fails.
 * @module
 */
import { parseArgs } from "node:util";
import { drawLife, type Life } from "./life.js";
import { describeMulti, drawMultiLife, type MultiLife } from "./multi-life.js";
import { runMultiLife } from "./multi-runner.js";
import { describe, runLife, SimFailure, type LifeStats } from "./runner.js";
import { shrink } from "./shrink.js";

const { values } = parseArgs({
  options: {
    seed: { type: "string" },
    minutes: { type: "string" },
    steps: { type: "string" },
    "no-crash": { type: "boolean", default: false },
    "no-cli": { type: "boolean", default: false },
    "no-damage": { type: "boolean", default: false },
    "no-full": { type: "boolean", default: false },
    "no-upgraded": { type: "boolean", default: false },
    "no-spread": { type: "boolean", default: false },
    verbose: { type: "boolean", default: false },
    multi: { type: "boolean", default: false },
  },
});
const kinds = {
  crash: !values["no-crash"],
  cli: !values["no-cli"],
  damage: !values["no-damage"],
  full: !values["no-full"],
  upgraded: !values["no-upgraded"],
  spread: !values["no-spread"],
};
// Each kind of life has its own default length.
const maxSteps = values.steps === undefined ? undefined : Number(values.steps);

/** A life of one store, or of a multi-store folder. */
type AnyLife = { multi: false; life: Life } | { multi: true; life: MultiLife };

const draw = (seed: number, multi: boolean): AnyLife =>
  multi ? { multi, life: drawMultiLife(seed, kinds, maxSteps) } : { multi, life: drawLife(seed, kinds, maxSteps) };

const run = (l: AnyLife, log?: (line: string) => void): Promise<LifeStats> => (l.multi ? runMultiLife(l.life, log) : runLife(l.life, log));

async function report(l: AnyLife, e: unknown): Promise<void> {
  const at = e instanceof SimFailure ? e.step : -1;
  console.log(`FAIL ${l.multi ? "multi-store " : ""}seed ${l.life.seed} at step ${at}: ${(e as Error).message}`);
  if (!(e instanceof SimFailure)) console.log((e as Error).stack);
  console.log("shrinking…");
  const lines = l.multi ? await shrunk(l.life, at, (x) => runMultiLife(x), describeMulti) : await shrunk(l.life, at, (x) => runLife(x), describe);
  for (const line of lines) console.log(line);
}

/** The report of `life` shrunk: its failure, options and steps. */
async function shrunk<S, L extends { options: object; steps: S[] }>(life: L, at: number, runOne: (l: L) => Promise<unknown>, say: (s: S) => string): Promise<string[]> {
  const small = await shrink(life, at, runOne);
  return [
    `shrunk to ${small.life.steps.length} steps (fails with: ${small.message}):`,
    `options ${JSON.stringify(small.life.options)}`,
    ...small.life.steps.map((s, i) => `  ${i}: ${say(s)}`),
  ];
}

if (values.seed !== undefined) {
  const l = draw(Number(values.seed), values.multi);
  const life = l.life;
  console.log(`${l.multi ? "multi-store " : ""}seed ${life.seed}: options ${JSON.stringify(life.options)}, ${life.steps.length} steps`);
  try {
    const stats = await run(l, values.verbose ? (line) => console.log(line) : undefined);
    console.log(`ok: ${stats.steps} steps, ${stats.versions} versions, ${stats.checks} full checks`);
  } catch (e) {
    await report(l, e);
    process.exitCode = 1;
  }
} else {
  const until = Date.now() + Number(values.minutes ?? "1") * 60_000;
  let lives = 0;
  let steps = 0;
  let versions = 0;
  let seed = (Date.now() ^ (process.pid << 16)) >>> 0;
  while (Date.now() < until) {
    const l = draw(seed, values.multi || lives % 3 === 2);
    try {
      const s = await run(l);
      lives++;
      steps += s.steps;
      versions += s.versions;
    } catch (e) {
      await report(l, e);
      process.exitCode = 1;
      break;
    }
    seed = (seed * 1103515245 + 12345) >>> 0;
  }
  console.log(`${lives} lives, ${steps} steps, ${versions} versions committed, no failure${process.exitCode === 1 ? " before the one above" : ""}`);
}
