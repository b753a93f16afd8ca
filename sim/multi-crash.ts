/**
 * The crash step of a multi-store life: the child-process MultiTree writer (multi-crash-writer.ts) commits, maybe
 * rolls the folder back, and is killed with SIGKILL a set time after it opened the folder or after it announced its
 * rollback (so that kills land inside `MultiTree.rollback` too), while a reader beside it checks every version it
 * sees whole. After the kill the folder must open at a whole version the child reached, with the model's app hash.
 * @module
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { MultiTree, toHex, type MultiReader } from "../src/index.js";
import { catching, codeOf, GONE } from "./multi-checks.js";
import { scriptArgs } from "./child-command.js";
import { inspectAfterKill } from "./multi-cli.js";
import type { ChildArgs } from "./multi-crash-writer.js";
import { childMultiOps, type MultiOp, type MultiStep } from "./multi-life.js";
import { appHashOf } from "./multi-model.js";
import type { MultiRun } from "./multi-runner.js";

const here = fileURLToPath(new URL(".", import.meta.url));

/** What the child did: the lines it printed, whether it was killed (or hung), its exit code and stderr. */
interface ChildRun {
  lines: string[];
  killed: boolean;
  hung: boolean;
  code: number | null;
  err: string;
}

/** How long a child may run before it is killed anyway (a hang is then a failure of the step). */
const LIMIT_MS = 60_000;

/** Runs a child writer, killed `killAfterMs` after it started ("spawn"), opened, or announced its rollback. */
function runChild(args: ChildArgs, killAt: "spawn" | "opened" | "rollback", killAfterMs: number, poll: () => void): Promise<ChildRun> {
  const child = spawn(process.execPath, [...scriptArgs(join(here, "multi-crash-writer.ts")), JSON.stringify(args)], {
    cwd: join(here, ".."),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  let killed = false;
  let hung = false;
  let armed = false;
  const timers: NodeJS.Timeout[] = [];
  const kill = (): void => {
    killed = child.exitCode === null && child.signalCode === null;
    if (killed) child.kill("SIGKILL");
  };
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
    if (armed) return;
    // A kill inside the rollback needs a short delay: it takes tens of milliseconds.
    const after = killAt === "opened" ? /^opened /m.test(out) && killAfterMs : /^rollback /m.test(out) && killAfterMs % 80;
    if (after === false) return;
    armed = true;
    timers.push(setTimeout(kill, after));
  });
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  if (killAt === "spawn") {
    armed = true;
    timers.push(setTimeout(kill, killAfterMs));
  }
  timers.push(
    setTimeout(() => {
      hung = true;
      kill();
    }, LIMIT_MS),
  );
  // Reads beside the writer, while it commits and rolls back.
  const polling = setInterval(poll, 25);
  return new Promise((resolve) => {
    child.on("exit", (code) => {
      clearInterval(polling);
      for (const t of timers) clearTimeout(t);
      resolve({ lines: out.split("\n").filter((l) => l !== ""), killed, hung, code, err });
    });
  });
}

/** Runs the crash step `s` of `run`'s life. */
export async function runCrash(run: MultiRun, s: Extract<MultiStep, { t: "crash" }>): Promise<void> {
  await run.closeWriter();
  const args: ChildArgs = {
    dir: run.dir,
    options: run.openOptions(),
    seed: s.seed,
    versions: s.versions,
    prune: s.prune,
    rollbackAt: s.rollbackAt,
    rollbackPick: s.rollbackPick,
  };
  const beside = MultiTree.openReadOnly(run.dir);
  const seen: Array<{ version: number; appHash: string }> = [];
  const problems: string[] = [];
  const child = await runChild(args, s.killAt, s.killAfterMs, () => {
    const problem = besideRead(beside, seen);
    if (problem !== undefined) problems.push(problem);
  });
  beside.close();
  if (problems.length > 0) run.fail(`a reader beside the child writer: ${problems[0]}`);
  if (child.hung) run.fail(`the child writer did not finish within a minute: ${child.lines.slice(-3).join(" | ")}`);
  if (!child.killed && child.code !== 0) run.fail(`the child writer exited with ${child.code}: ${child.err.slice(0, 2000)}`);
  if (!child.lines.some((l) => l.startsWith("opened "))) run.fail(`the child writer did not open the folder: ${child.err.slice(0, 2000)}`);
  const next = replayChild(run, child.lines, childMultiOps(s.seed, s.versions));
  if (s.relapse >= 0) {
    // A writer restarted on the folder as the kill left it, killed again, maybe while its open recovers the folder.
    const again = await runChild({ ...args, versions: 0, prune: false, rollbackAt: -1 }, "spawn", s.relapse, () => undefined);
    run.log(`   second child ${again.killed ? "killed" : "finished"} after: ${again.lines.slice(-1).join("")}`);
    if (!again.killed && again.code !== 0) run.fail(`a writer restarted after the kill exited with ${again.code}: ${again.err.slice(0, 2000)}`);
  }
  if (s.inspect) inspectAfterKill(run);
  const e = catching(() => run.openWriter(false));
  if (e !== undefined) run.fail(`after the kill, MultiTree.open refused the folder: ${codeOf(e) ?? (e as Error).name}: ${(e as Error).message}`);
  // The action in flight when the child died (a commit, or a rollback it announced) may have landed whole.
  const landed = !run.atModel() && child.killed && next !== undefined;
  if (landed) next();
  const w = run.w;
  const how = `${child.killed ? "killed" : "finished"} after: ${child.lines.slice(-2).join(" | ")}`;
  run.log(`   child ${how}; reopened at ${w.version}${landed ? " (the action in flight landed)" : ""}; ${seen.length} reads beside`);
  if (!run.atModel()) {
    const m = run.model;
    run.fail(`after the kill the folder opened at ${w.version} (app hash ${toHex(w.appHash)}); the child reached ${m.version} (${m.currentAppHash()}); it was ${how}`);
  }
  // Without a rollback in the child, every version a reader saw whole survives the kill, with its app hash.
  if (!child.lines.some((l) => l.startsWith("rollback "))) {
    for (const { version, appHash } of seen) {
      const want = run.model.appHashes.get(version);
      if (want !== appHash) run.fail(`a reader beside the child saw version ${version} whole with app hash ${appHash}; after the kill it ${want === undefined ? "is gone" : `has ${want}`}`);
    }
  }
  run.checkAll();
}

/**
 * Replays what the child printed into the model; gives the action that was in flight when it died (to apply if the
 * folder shows it landed), if any.
 */
function replayChild(run: MultiRun, lines: string[], ops: MultiOp[][]): (() => void) | undefined {
  let i = 0;
  let announced: number | undefined;
  const commitNext = (): void => {
    for (const op of ops[i++]!) run.model.apply(op);
    run.committed(run.model.commit().version);
  };
  for (const line of lines) {
    const [word, arg] = line.split(" ");
    const n = Number(arg);
    if (word === "opened" && n !== run.model.version) run.fail(`the child writer opened at ${n}, the model is at ${run.model.version}`);
    if (word === "committed") {
      commitNext();
      if (run.model.version !== n) run.fail(`the child committed ${n}, the model ${run.model.version}`);
    }
    if (word === "prune") run.pruning(n, run.life.options.keepEvery);
    if (word === "rollback") announced = n;
    if (word === "rolledback") {
      run.rolledBack(n);
      announced = undefined;
    }
  }
  if (announced !== undefined) {
    const to = announced;
    return () => run.rolledBack(to);
  }
  return i < ops.length ? commitNext : undefined;
}

/**
 * A read beside the child writer: refreshes, reads every store's hash at the newest whole version and its app hash;
 * they must agree (never a torn version). Returns a problem, or undefined; notes what it saw in `seen`.
 */
function besideRead(ro: MultiReader, seen: Array<{ version: number; appHash: string }>): string | undefined {
  try {
    const v = ro.refresh();
    if (v === 0) return undefined;
    // Every view begins before any hash is read: a rollback in between shows as VERSION_ROLLED_BACK.
    const views = ro.names.map((n) => [n, ro.at(n, v)] as const);
    const app = toHex(ro.appHashAt(v)!);
    const hashes = new Map(views.map(([n, view]) => [n, toHex(view.hash)]));
    const computed = appHashOf(hashes);
    if (computed !== app) return `at version ${v} the stores' hashes give app hash ${computed}, the marker ${app}`;
    seen.push({ version: v, appHash: app });
    return undefined;
  } catch (e) {
    // The child may prune or roll back between the refresh and the reads.
    const code = codeOf(e);
    if (code !== undefined && [...GONE, "VERSION_NOT_FOUND"].includes(code)) return undefined;
    return `threw ${code ?? (e as Error).name}: ${(e as Error).message}`;
  }
}
