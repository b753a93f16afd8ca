/**
 * Runs one life against a real store and checks it, after every step, against the model: the kept versions, their
 * hashes and contents, proofs (verified by @confio/ics23), change streams, readers that must never mix histories,
 * crashes of a child-process writer, export and import, and the CLI an operator runs.
 * @module
 */
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { iavlSpec, verifyMembership, verifyNonMembership } from "@confio/ics23";
import { fromHex, IavlError, toHex, Tree, type ExportNode, type ReadOnlyStore, type ReadonlyTree, type VersionChange } from "../src/index.js";
import { childOps, openOptions, stepArgs, type Durability, type Life, type Step } from "./life.js";
import { KEYS, keyBytes, keyHex, Model, type Rec } from "./model.js";
import { Random } from "./random.js";
import { branchRowsProblem } from "../test/helpers.js";
import { simLayout2Ops } from "../test/fixtures/sim-layout2-history.js";
import { cliCommand, scriptArgs } from "./child-command.js";
import { copyStore, damageFile, tried, wrongGet, wrongIteration, type Outcome } from "./damage.js";

const here = fileURLToPath(new URL(".", import.meta.url));
const root = join(here, "..");

/** A life's failure: the step it happened at and what was wrong. */
export class SimFailure extends Error {
  constructor(
    readonly step: number,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** What a life did. */
export interface LifeStats {
  steps: number;
  versions: number;
  checks: number;
}

type Allowed = readonly string[];
const GONE: Allowed = ["VERSION_PRUNED", "VERSION_ROLLED_BACK"];

function codeOf(e: unknown): string | undefined {
  return e instanceof IavlError ? e.code : undefined;
}

function eq(a: Uint8Array | null | undefined, b: Uint8Array | null | undefined): boolean {
  if (a == null || b == null) return a == b;
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function show(v: Uint8Array | null | undefined): string {
  return v == null ? String(v) : v.length > 12 ? `${toHex(v.subarray(0, 12))}…(${v.length})` : toHex(v);
}

interface HeldView {
  view: ReadonlyTree;
  rec: Rec;
}

interface HeldStream {
  it: Iterator<VersionChange>;
  expected: Array<{ version: number; key: string; value: Uint8Array | null }>;
  pos: number;
  label: string;
}

/** Runs `life` in a fresh folder; throws {@link SimFailure} at the first step whose check fails. */
export async function runLife(life: Life, log: (line: string) => void = () => undefined): Promise<LifeStats> {
  const run = new LifeRun(life, log);
  try {
    await run.all();
  } finally {
    run.dispose();
  }
  return { steps: life.steps.length, versions: run.model.latest, checks: run.checks };
}

/** The store the `upgraded` lives start from. */
const SIM_LAYOUT2_FIXTURE = fileURLToPath(new URL("../test/fixtures/sim-layout2/iavl.sqlite.layout2", import.meta.url));

class LifeRun {
  readonly model: Model;
  readonly dir = mkdtempSync(join(tmpdir(), "iavlite-sim-"));
  private readonly extra: string[] = [];
  private readonly r: Random;
  private tree: Tree | undefined;
  private durability: Durability;
  private readers: Array<{ store: ReadOnlyStore; rec: Rec | undefined } | undefined> = [];
  private views: Array<HeldView | undefined> = [];
  private streams: Array<HeldStream | undefined> = [];
  private pending = new Set<Promise<unknown>>();
  /** Reader processes still running: each resolves to the lines it printed. */
  private procs: Array<Promise<string[]>> = [];
  /** Versions at or below this may have been pruned (explicitly or automatically). */
  private floor = Number.NEGATIVE_INFINITY;
  /** keepEvery snapshots at or below this may have been pruned (by a prune that did not keep them). */
  private snapFloor = Number.NEGATIVE_INFINITY;
  /** Versions an explicit prune has removed for certain. */
  private gone = new Set<number>();
  private step = -1;
  private background: IavlError | undefined;
  checks = 0;

  constructor(
    private readonly life: Life,
    private readonly log: (line: string) => void,
  ) {
    this.model = new Model(life.options.initialVersion);
    this.r = new Random(life.seed ^ 0x5eed);
    this.durability = life.options.durability;
  }

  async all(): Promise<void> {
    if (this.life.options.upgraded === true) this.startFromLayout2();
    this.openWriter();
    for (this.step = 0; this.step < this.life.steps.length; this.step++) {
      const s = this.life.steps[this.step]!;
      this.log(`${this.step}: ${describe(s)}`);
      try {
        await this.run(s);
        const bg = this.background;
        if (bg !== undefined) this.fail(`an automatic prune failed: ${bg.code}: ${bg.message}`);
      } catch (e) {
        if (e instanceof SimFailure) throw e;
        throw new SimFailure(this.step, `${describe(s)} threw ${codeOf(e) ?? (e as Error).name}: ${(e as Error).message}`, { cause: e });
      }
    }
    this.log(`${this.step}: (end) the stored branches`);
    await this.checkBranchRows();
  }

  /**
   * The life starts from a copy of a store layout-2 code wrote (test/fixtures/sim-layout2), its history fed to the
   * model first: the first open upgrades it, and every step after runs on an upgraded store.
   */
  private startFromLayout2(): void {
    copyFileSync(SIM_LAYOUT2_FIXTURE, join(this.dir, "iavl.sqlite"));
    for (const ops of simLayout2Ops()) {
      for (const op of ops) this.model.apply(op);
      this.model.commit();
    }
    // Its writer took no keepEvery snapshots: their versions are not checkpoints, and a prune may take them.
    this.snapFloor = this.model.latest;
  }

  /**
   * After the last step: the writer closed (stopping an automatic prune at a step boundary), a writer without
   * automatic prunes runs one that removes no version and so only finishes what was cut short, and then the stored
   * branch rows must be exactly those the kept checkpoints' trees reach: none missing (a kept version would break),
   * none left behind (the disk would grow without end).
   */
  private async checkBranchRows(): Promise<void> {
    await this.settle();
    this.closeWriter();
    const t = Tree.open(this.dir, { checkpointInterval: this.life.options.checkpointInterval });
    try {
      const oldest = t.versions()[0];
      if (oldest !== undefined && oldest > 1) await t.prune(oldest - 1);
    } finally {
      t.close();
    }
    const problem = branchRowsProblem(this.dir);
    if (problem !== undefined) this.fail(problem);
    this.openWriter();
  }

  private fail(message: string): never {
    throw new SimFailure(this.step, message);
  }

  private get w(): Tree {
    return this.tree!;
  }

  /** Opens the writer; `expect`: at the model's latest version (not after a child wrote to the store). */
  private openWriter(expect = true): void {
    const o = this.life.options;
    this.tree = Tree.open(this.dir, {
      ...openOptions(o, this.durability),
      // Reported at the end of the step: thrown here, it would escape the event loop's callback.
      onBackgroundError: (e) => (this.background ??= e),
    });
    if (expect && this.w.version !== this.model.latest) this.fail(`reopened at ${this.w.version}, the model is at ${this.model.latest}`);
  }

  private closeWriter(): void {
    this.tree?.close();
    this.tree = undefined;
    this.model.discardWork();
  }

  private async run(s: Step): Promise<void> {
    switch (s.t) {
      case "write":
        for (const op of s.ops) this.apply(op.k, op.v);
        return;
      case "clear":
        for (const k of this.model.workingKeys()) this.apply(k, null);
        return;
      case "commit":
        this.commit();
        return;
      case "burst":
        for (const ops of s.versions) {
          for (const op of ops) this.apply(op.k, op.v);
          this.commit();
        }
        return;
      case "flush":
        await this.w.flush();
        return;
      case "tick":
        for (let i = 0; i < s.n; i++) await new Promise((r) => setImmediate(r));
        return;
      case "prune":
        return this.prune(s);
      case "settle":
        await this.settle();
        this.checkAll();
        return;
      case "reopen":
        this.closeWriter();
        this.durability = s.durability;
        this.openWriter();
        this.checkAll();
        return;
      case "rollback":
        return this.rollback(s.pick);
      case "reader":
        return this.reader(s.slot, s.action);
      case "view":
        return this.openView(s);
      case "view-read":
        return this.readView(s.slot);
      case "stream":
        return this.openStream(s);
      case "stream-step":
        return this.stepStream(s.slot, s.n);
      case "export":
        return this.exportImport(s.pick);
      case "crash":
        return this.crash(s);
      case "cli":
        return this.cli();
      case "cli-op":
        return this.cliOp(s);
      case "crash-import":
        return this.crashImport(s);
      case "reader-process":
        this.readerProcess(s.ms);
        return;
      case "damage":
        return this.damage(s);
      case "full":
        return this.full(s);
      case "check":
        this.checkAll();
        return;
    }
  }

  private apply(k: number, v: Uint8Array | null): void {
    const key = keyBytes(k);
    if (v === null) {
      const had = this.w.remove(key);
      const model = this.model.workingKeys().includes(k);
      if (had !== model) this.fail(`remove(${keyHex(k)}) said ${had}, the model ${model}`);
    } else this.w.set(key, v);
    this.model.apply({ k, v });
    const got = this.w.get(key);
    if (!eq(got, v === null ? undefined : v)) this.fail(`get(${keyHex(k)}) of the working state gave ${show(got)}, expected ${show(v)}`);
  }

  private commit(): void {
    const { version, hash } = this.w.commit();
    const rec = this.model.commit();
    if (version !== rec.version || toHex(hash) !== rec.hash) {
      this.fail(`commit gave version ${version} ${toHex(hash)}, the model ${rec.version} ${rec.hash}`);
    }
    const keep = this.life.options.keepRecent;
    if (keep !== undefined) this.floor = Math.max(this.floor, version - keep);
  }

  private track(p: Promise<unknown>): Promise<unknown> {
    const t = p.then(
      () => undefined,
      (e: unknown) => {
        // A prune cut short by a close is expected; anything else is a failure of the life.
        if (codeOf(e) !== "CLOSED") throw e;
      },
    );
    this.pending.add(t);
    void t.catch(() => undefined).finally(() => this.pending.delete(t));
    return t;
  }

  private async prune(s: Extract<Step, { t: "prune" }>): Promise<void> {
    const kept = this.w.versions();
    const latest = this.model.latest;
    if (kept.length === 0) return;
    const upTo = kept[0]! + Math.floor(s.pick * (latest - kept[0]! + 1));
    const ke = s.keepEvery ? this.life.options.keepEvery : undefined;
    this.floor = Math.max(this.floor, upTo);
    if (ke === undefined) this.snapFloor = Math.max(this.snapFloor, upTo);
    const epoch = this.model.epoch;
    const p = this.w.prune(upTo, { keepEvery: ke }).then(() => {
      if (this.model.epoch !== epoch) return;
      for (const v of this.model.versions.keys()) {
        if (v <= upTo && v < latest && !(ke !== undefined && v % ke === 0)) this.gone.add(v);
      }
    });
    const t = this.track(p);
    if (s.wait) {
      await t;
      this.checkAll();
    }
  }

  private async settle(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
    const procs = this.procs.splice(0);
    for (const lines of await Promise.all(procs)) this.checkReaderLines(lines);
  }

  private async rollback(pick: number): Promise<void> {
    await this.settle();
    this.closeWriter();
    const kept = Tree.openReadOnly(this.dir);
    let versions: number[];
    try {
      versions = kept.versions();
    } finally {
      kept.close();
    }
    if (versions.length === 0) {
      this.openWriter();
      return;
    }
    const to = versions[Math.floor(pick * versions.length)]!;
    Tree.rollback(this.dir, to);
    this.rolledBack(to);
    this.openWriter();
    this.checkAll();
  }

  /** The model follows a rollback to `to`: a new history begins after it. */
  private rolledBack(to: number): void {
    this.model.rollback(to);
    this.floor = Math.min(this.floor, to);
    this.snapFloor = Math.min(this.snapFloor, to);
    for (const v of [...this.gone]) if (v > to) this.gone.delete(v);
  }

  /** The kept versions, read with the writer closed. */
  private keptOnDisk(): number[] {
    const reader = Tree.openReadOnly(this.dir);
    try {
      return reader.versions();
    } finally {
      reader.close();
    }
  }

  /** With the writer closed, `iavlite rollback --to V --yes` or `iavlite prune --keep-recent N`, as an operator runs them. */
  private async cliOp(s: Extract<Step, { t: "cli-op" }>): Promise<void> {
    if (this.model.latest === 0) return;
    await this.settle();
    this.closeWriter();
    const kept = this.keptOnDisk();
    if (s.rollback) {
      const to = kept[Math.floor(s.pick * kept.length)]!;
      this.iavlite(["rollback", this.dir, "--to", String(to), "--yes"]);
      this.rolledBack(to);
    } else {
      const n = 1 + Math.floor(s.pick * 10);
      const ke = s.keepEvery ? this.life.options.keepEvery : undefined;
      this.iavlite(["prune", this.dir, "--keep-recent", String(n), ...(ke === undefined ? [] : ["--keep-every", String(ke)])]);
      const latest = this.model.latest;
      const upTo = latest - n;
      this.floor = Math.max(this.floor, upTo);
      if (ke === undefined) this.snapFloor = Math.max(this.snapFloor, upTo);
      for (const v of this.model.versions.keys()) if (v <= upTo && v < latest && !(ke !== undefined && v % ke === 0)) this.gone.add(v);
    }
    this.openWriter();
    this.checkAll();
  }

  /** Runs the CLI; fails the life unless it exits 0. */
  private iavlite(args: string[]): string {
    const r = spawnSync(process.execPath, [...cliCommand(), ...args], { cwd: root, encoding: "utf8" });
    if (r.status !== 0) this.fail(`iavlite ${args.join(" ")} exited ${r.status}: ${r.stdout.slice(0, 1000)} ${r.stderr.slice(0, 1000)}`);
    return r.stdout;
  }

  /**
   * Exports a kept version with the CLI beside the live writer, and imports it into a new folder with the CLI, killed
   * with SIGKILL after `killAfterMs`: the folder must then hold the whole version or no store, and an import run again
   * must succeed.
   */
  private async crashImport(s: Extract<Step, { t: "crash-import" }>): Promise<void> {
    const kept = this.w.versions();
    if (kept.length === 0) return;
    await this.w.flush();
    const v = kept[Math.floor(s.pick * kept.length)]!;
    const rec = this.model.versions.get(v)!;
    const work = mkdtempSync(join(tmpdir(), "iavlite-sim-import-"));
    this.extra.push(work);
    const file = join(work, "export.bin");
    const target = join(work, "store");
    const exported = spawnSync(process.execPath, [...cliCommand(), "export", this.dir, "--version", String(v), "-o", file], { cwd: root, encoding: "utf8" });
    if (exported.status !== 0) {
      // Pruned meanwhile by an automatic prune: fine for a version it may take.
      if (!this.mustKeep(v) && exported.stderr.includes("VERSION_PRUNED")) return;
      this.fail(`iavlite export of ${v} exited ${exported.status}: ${exported.stderr.slice(0, 1000)}`);
    }
    const args = [...cliCommand(), "import", target, "--version", String(v), "--hash", rec.hash, "-i", file];
    const child = spawn(process.execPath, args, { cwd: root, stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    const killed = await Promise.race([exited.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), s.killAfterMs))]);
    if (killed) child.kill("SIGKILL");
    const code = await exited;
    if (!killed && code !== 0) this.fail(`iavlite import exited ${code}: ${err.slice(0, 1000)}`);
    let whole = false;
    try {
      const r = Tree.openReadOnly(target);
      try {
        whole = r.version === v && toHex(r.hash) === rec.hash;
        if (!whole) this.fail(`a killed import left a store at ${r.version} ${toHex(r.hash)}, expected nothing or ${v} ${rec.hash}`);
      } finally {
        r.close();
      }
    } catch (e) {
      if (e instanceof SimFailure) throw e;
      if (codeOf(e) !== "NOT_A_STORE") this.fail(`after a killed import, opening the folder threw ${codeOf(e) ?? (e as Error).name}: ${(e as Error).message}`);
    }
    if (!whole) {
      const again = spawnSync(process.execPath, args, { cwd: root, encoding: "utf8" });
      if (again.status !== 0) this.fail(`iavlite import run again after a kill exited ${again.status}: ${again.stderr.slice(0, 1000)}`);
    }
    const imported = Tree.openReadOnly(target);
    try {
      this.checkView(() => imported.at(v), rec, `the CLI import of ${v}`, []);
    } finally {
      imported.close();
    }
  }

  /** Starts a reader in another process; what it read is checked at the next settle. */
  private readerProcess(ms: number): void {
    if (this.model.latest === 0) return;
    const child = spawn(process.execPath, [...scriptArgs(join(here, "reader-process.ts")), this.dir, String(ms)], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    this.procs.push(
      new Promise((resolve) =>
        child.on("exit", (code) => resolve(code === 0 ? out.trim().split("\n").filter((l) => l !== "") : [`failed ${code} ${err.slice(0, 1000)}`])),
      ),
    );
  }

  /** Each read of a reader process must be a whole version of some history, as committed. */
  private checkReaderLines(lines: string[]): void {
    for (const line of lines) {
      if (line.startsWith("gone ")) continue;
      if (line.startsWith("failed ")) this.fail(`a reader process ${line}`);
      const [v, hash, pairs = ""] = line.split(" ");
      const rec = this.model.ever.get(`${v}:${hash}`);
      if (rec === undefined) this.fail(`a reader process read version ${v} with hash ${hash}, which no history committed`);
      const got = pairs === "" ? [] : pairs.split(",");
      const want = [...rec.content].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([k, val]) => `${k}=${toHex(val)}`);
      if (got.join(",") !== want.join(",")) this.fail(`a reader process read version ${v} with other contents than it had (${got.length} keys, expected ${want.length})`);
    }
  }

  /** Versions every store of this history must still hold. */
  private mustKeep(v: number): boolean {
    const ke = this.life.options.keepEvery;
    return v === this.model.latest || v > this.floor || (ke !== undefined && v % ke === 0 && v > this.snapFloor);
  }

  /** Checks the kept set and every kept version (a sample when there are many) against the model. */
  private checkAll(): void {
    this.checks++;
    const kept = this.w.versions();
    const latest = this.model.latest;
    if (latest === 0 || latest < this.life.options.initialVersion) {
      if (kept.length > 0) this.fail(`versions ${kept.join(",")} kept before any commit`);
      return;
    }
    if (kept[kept.length - 1] !== latest) this.fail(`the latest kept is ${kept[kept.length - 1]}, the model's ${latest}`);
    const keptSet = new Set(kept);
    for (const v of kept) {
      if (!this.model.versions.has(v)) this.fail(`version ${v} is kept but was never committed in this history`);
      if (this.gone.has(v)) this.fail(`version ${v} is kept after a prune that removed it (kept: ${span(kept)})`);
    }
    for (const v of this.model.versions.keys()) {
      if (this.mustKeep(v) && !keptSet.has(v)) this.fail(`version ${v} is gone but must be kept (kept: ${span(kept)}; floor ${this.floor}, snapshots ${this.snapFloor})`);
    }
    const sample = kept.length <= 8 ? kept : [kept[0]!, ...Array.from({ length: 6 }, () => this.r.pick(kept)), latest];
    for (const v of new Set(sample)) {
      const rec = this.model.versions.get(v)!;
      // An automatic prune runs beside the checks: a version it may take can go while it is read, and must say so.
      const allowed = this.mustKeep(v) ? [] : ["VERSION_PRUNED"];
      if (this.checkView(() => this.w.at(v), rec, `version ${v}`, allowed)) this.checkChanges(v, rec, allowed);
    }
    const report = this.w.at(latest).audit();
    if (!report.ok) this.fail(`the audit of ${latest} found ${report.faults.length} fault(s): ${JSON.stringify(report.faults[0])}`);
  }

  private checkChanges(v: number, rec: Rec, allowed: Allowed): void {
    let got: VersionChange[];
    try {
      got = [...this.w.changes(v, v)];
    } catch (e) {
      if (allowed.includes(codeOf(e) ?? "")) return;
      this.fail(`changes(${v}) of a kept version threw ${codeOf(e)}: ${(e as Error).message}`);
    }
    const want = rec.changes;
    if (got.length !== want.length || got.some((c, i) => toHex(c.key) !== want[i]!.key || !eq(c.value, want[i]!.value))) {
      this.fail(`changes(${v}) gave ${got.map((c) => `${toHex(c.key)}=${show(c.value)}`).join(" ")}, expected ${want.map((c) => `${c.key}=${show(c.value)}`).join(" ")}`);
    }
  }

  /**
   * Checks a view against the version it should read: hash, size, sampled gets, the whole iteration, two proofs.
   * Errors with a code in `allowed` mean the view's version is gone (returns false); any other, or wrong data, fails.
   */
  private checkView(of: ReadonlyTree | (() => ReadonlyTree), rec: Rec, label: string, allowed: Allowed): boolean {
    try {
      const view = typeof of === "function" ? of() : of;
      const hash = toHex(view.hash);
      if (hash !== rec.hash) this.fail(`${label}: hash ${hash}, expected ${rec.hash}`);
      if (view.size !== rec.content.size) this.fail(`${label}: size ${view.size}, expected ${rec.content.size}`);
      for (let i = 0; i < 4; i++) {
        const k = this.r.int(0, KEYS - 1);
        const got = view.get(keyBytes(k));
        const want = rec.content.get(keyHex(k));
        if (!eq(got, want)) this.fail(`${label}: get(${keyHex(k)}) gave ${show(got)}, expected ${show(want)}`);
      }
      const want = [...rec.content].sort((a, b) => (a[0] < b[0] ? -1 : 1));
      const reverse = this.r.chance(0.3);
      if (reverse) want.reverse();
      let i = 0;
      for (const [k, v] of view.iterate({ reverse })) {
        const w = want[i++];
        if (w === undefined || toHex(k) !== w[0] || !eq(v, w[1])) this.fail(`${label}: iteration item ${i - 1} is ${toHex(k)}=${show(v)}, expected ${w?.[0]}=${show(w?.[1])}`);
      }
      if (i !== want.length) this.fail(`${label}: iteration ended after ${i} of ${want.length} keys`);
      if (rec.content.size > 0) {
        const [k, v] = this.r.pick(want);
        if (v.length > 0) {
          const proof = view.proof(fromHex(k));
          if (!verifyMembership(proof, iavlSpec, fromHex(rec.hash), fromHex(k), v)) this.fail(`${label}: the proof of ${k} does not verify`);
        } else if (codeOf(rethrowAllowed(catching(() => view.proof(fromHex(k))), allowed)) !== "EMPTY_VALUE_PROOF") {
          this.fail(`${label}: a proof of ${k}, whose value is empty, did not throw EMPTY_VALUE_PROOF (ICS23 cannot prove it)`);
        }
        const absent = this.r.int(0, KEYS - 1);
        const ak = keyHex(absent);
        if (!rec.content.has(ak)) {
          // Its proof holds its neighbours' existence proofs, which ICS23 cannot give for an empty value.
          const asc = reverse ? [...want].reverse() : want;
          const after = asc.findIndex(([key]) => key > ak);
          const neighbours = [asc[after === -1 ? asc.length - 1 : after - 1], after === -1 ? undefined : asc[after]];
          if (neighbours.some((n) => n !== undefined && n[1].length === 0)) {
            if (codeOf(rethrowAllowed(catching(() => view.proof(keyBytes(absent))), allowed)) !== "EMPTY_VALUE_PROOF") this.fail(`${label}: the absence proof of ${ak}, beside an empty value, did not throw EMPTY_VALUE_PROOF`);
          } else if (!verifyNonMembership(view.proof(keyBytes(absent)), iavlSpec, fromHex(rec.hash), keyBytes(absent))) {
            this.fail(`${label}: the absence proof of ${ak} does not verify`);
          }
        }
      }
      return true;
    } catch (e) {
      if (e instanceof SimFailure) throw e;
      const code = codeOf(e);
      if (code !== undefined && allowed.includes(code)) return false;
      this.fail(`${label}: threw ${code ?? (e as Error).name}: ${(e as Error).message}`);
    }
  }

  private reader(slot: number, action: "open" | "refresh" | "read" | "close"): void {
    const held = this.readers[slot];
    if (action === "open") {
      if (held !== undefined) return;
      const store = Tree.openReadOnly(this.dir);
      this.readers[slot] = { store, rec: this.recOf(store) };
      return;
    }
    if (held === undefined) return;
    if (action === "close") {
      held.store.close();
      this.readers[slot] = undefined;
    } else if (action === "refresh") {
      held.store.refresh();
      held.rec = this.recOf(held.store);
    } else if (held.rec !== undefined) {
      // The version it read may have been pruned or replaced since: then it must say so, never answer from another.
      if (!this.checkView(held.store, held.rec, `reader ${slot} at ${held.rec.version}`, GONE)) held.rec = undefined;
    }
  }

  /** The model's record of the version a read-only handle is at (which may lag the writer with async durability). */
  private recOf(store: ReadOnlyStore): Rec | undefined {
    const v = store.version;
    if (v === 0) return undefined;
    const rec = this.model.versions.get(v);
    if (rec === undefined) this.fail(`a reader opened at version ${v}, which the model never committed`);
    if (toHex(store.hash) !== rec.hash) this.fail(`a reader opened at version ${v} reads hash ${toHex(store.hash)}, expected ${rec.hash}`);
    return rec;
  }

  private openView(s: Extract<Step, { t: "view" }>): void {
    const source = s.from === "reader" ? this.readers[s.slot]?.store : this.w;
    if (source === undefined) return;
    const kept = source.versions();
    if (kept.length === 0) return;
    const v = kept[Math.floor(s.pick * kept.length)]!;
    const rec = this.model.versions.get(v);
    if (rec === undefined) this.fail(`version ${v} is listed but the model never committed it`);
    try {
      this.views[s.slot] = { view: source.at(v), rec };
    } catch (e) {
      // Pruned since it was listed (an automatic prune runs beside).
      if (this.mustKeep(v) || codeOf(e) !== "VERSION_PRUNED") throw e;
    }
  }

  private readView(slot: number): void {
    const held = this.views[slot];
    if (held === undefined) return;
    if (!this.checkView(held.view, held.rec, `a view of ${held.rec.version}`, [...GONE, "CLOSED"])) this.views[slot] = undefined;
  }

  private openStream(s: Extract<Step, { t: "stream" }>): void {
    const reader = this.readers[s.slot]?.store;
    if (reader === undefined) return;
    const kept = reader.versions();
    if (kept.length === 0) return;
    const from = kept[Math.floor(s.from * kept.length)]!;
    const to = Math.min(from + s.span, kept[kept.length - 1]!);
    const expected: HeldStream["expected"] = [];
    for (let v = from; v <= to; v++) {
      const rec = this.model.versions.get(v);
      if (rec === undefined) this.fail(`a reader lists version ${v}, which the model never committed`);
      for (const c of rec.changes) expected.push({ version: v, key: c.key, value: c.value });
    }
    this.streams[s.slot] = { it: reader.changes(from, to), expected, pos: 0, label: `changes(${from}, ${to})` };
  }

  private stepStream(slot: number, n: number): void {
    const held = this.streams[slot];
    if (held === undefined) return;
    for (let i = 0; i < n; i++) {
      let r: IteratorResult<VersionChange>;
      try {
        r = held.it.next();
      } catch (e) {
        const code = codeOf(e);
        if (code !== undefined && [...GONE, "CLOSED"].includes(code)) {
          this.streams[slot] = undefined;
          return;
        }
        this.fail(`${held.label} threw ${code ?? (e as Error).name}: ${(e as Error).message}`);
      }
      if (r.done === true) {
        if (held.pos !== held.expected.length) this.fail(`${held.label} ended after ${held.pos} of ${held.expected.length} changes`);
        this.streams[slot] = undefined;
        return;
      }
      const want = held.expected[held.pos++];
      const c = r.value;
      if (want === undefined || c.version !== want.version || toHex(c.key) !== want.key || !eq(c.value, want.value)) {
        this.fail(`${held.label} change ${held.pos - 1} is ${c.version}:${toHex(c.key)}=${show(c.value)}, expected ${want === undefined ? "none" : `${want.version}:${want.key}=${show(want.value)}`} (another history?)`);
      }
    }
  }

  private async exportImport(pick: number): Promise<void> {
    const kept = this.w.versions();
    if (kept.length === 0) return;
    const v = kept[Math.floor(pick * kept.length)]!;
    const rec = this.model.versions.get(v)!;
    const allowed = this.mustKeep(v) ? [] : ["VERSION_PRUNED"];
    let nodes: ExportNode[];
    try {
      nodes = [...this.w.at(v).export()];
    } catch (e) {
      if (allowed.includes(codeOf(e) ?? "")) return;
      throw e;
    }
    const dir = mkdtempSync(join(tmpdir(), "iavlite-sim-import-"));
    this.extra.push(dir);
    const imported = await Tree.import(dir, nodes, { version: v, expectedHash: fromHex(rec.hash), checkpointInterval: this.life.options.checkpointInterval });
    try {
      // What an export handed out is the caller's: scribbling on it must change nothing stored.
      for (const n of nodes) n.value?.fill(0xee);
      this.checkView(() => imported.at(v), rec, `the import of ${v}`, []);
      this.checkView(() => this.w.at(v), rec, `version ${v} after its export was scribbled on`, allowed);
    } finally {
      imported.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }

  /**
   * Closes the writer, lets a child process commit the child's seeded versions, and kills it with SIGKILL after
   * `killAfterMs` (or lets it finish): the store must reopen at a version the child reached, whole.
   */
  /**
   * A copy of the store, damaged: every read of it is right (as the model has it) or refused with an IavlError, never
   * a wrong value nor SQLite's own error. The copy is taken beside the open writer, so an undamaged twin is read
   * first: a copy that raced a WAL checkpoint is skipped (it says nothing about damage).
   */
  private async damage(s: Extract<Step, { t: "damage" }>): Promise<void> {
    await this.settle();
    const latest = this.model.latest;
    const rec = this.model.versions.get(latest);
    if (rec === undefined) return;
    const keys = Array.from({ length: KEYS }, (_, k) => keyBytes(k));
    const twin = join(this.dir, "..", `${this.dir.split("/").pop()}-twin`);
    const copy = `${twin}-damaged`;
    try {
      copyStore(this.dir, twin);
      const whole = tried(() => {
        const ro = Tree.openReadOnly(twin);
        try {
          return ro.version !== latest ? `version ${ro.version}` : (wrongGet(ro.at(latest), keys, rec.content) ?? wrongIteration(ro.at(latest), rec.content));
        } finally {
          ro.close();
        }
      });
      if (whole.outcome !== "right") return;
      copyStore(twin, copy);
      const file = join(copy, s.wal && existsSync(join(copy, "iavl.sqlite-wal")) ? "iavl.sqlite-wal" : "iavl.sqlite");
      const r = new Random(s.seed);
      const where = damageFile(file, () => r.next(), s.kind);
      const paths: Array<[string, Outcome]> = [];
      let ro: ReadOnlyStore | undefined;
      paths.push(["open", tried(() => void (ro = Tree.openReadOnly(copy)))]);
      if (ro !== undefined) {
        const h = ro;
        paths.push(["get", tried(() => (h.version === latest ? wrongGet(h.at(latest), keys, rec.content) : undefined))]);
        paths.push(["iterate", tried(() => (h.version === latest ? wrongIteration(h.at(latest), rec.content) : undefined))]);
        h.close();
      }
      for (const [name, o] of paths) {
        if (o.outcome === "wrong" || o.outcome === "raw") this.fail(`a copy damaged in ${file.endsWith("-wal") ? "its WAL" : "its main file"} (${where}): ${name} ${o.outcome}: ${o.note}`);
      }
    } finally {
      rmSync(twin, { recursive: true, force: true });
      rmSync(copy, { recursive: true, force: true });
    }
  }

  private async crash(s: Extract<Step, { t: "crash" }>): Promise<void> {
    await this.settle();
    this.closeWriter();
    // Before the first commit, the child's first version is the initial one.
    const start = this.model.latest === 0 ? this.life.options.initialVersion - 1 : this.model.latest;
    const child = spawn(process.execPath, [...scriptArgs(join(here, "crash-writer.ts")), this.dir, JSON.stringify({ ...this.life.options, durability: this.durability }), String(s.seed), String(s.versions), s.prune ? "1" : "0"], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    const opened = await new Promise<boolean>((resolve) => {
      const poll = setInterval(() => {
        if (out.includes("opened")) {
          clearInterval(poll);
          resolve(true);
        }
      }, 5);
      void exited.then(() => {
        clearInterval(poll);
        resolve(out.includes("opened"));
      });
    });
    if (!opened) this.fail(`the crash child did not open the store: ${err.slice(0, 2000)}`);
    const killed = await Promise.race([exited.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), s.killAfterMs))]);
    if (killed) child.kill("SIGKILL");
    const code = await exited;
    if (!killed && code !== 0) this.fail(`the crash child exited with ${code}: ${err.slice(0, 2000)}`);
    let committed = start;
    for (const line of out.split("\n")) {
      const m = /^committed (\d+)/.exec(line);
      if (m !== null) committed = Number(m[1]);
      const p = /^prune (\d+) (\d+)/.exec(line);
      if (p !== null) {
        this.floor = Math.max(this.floor, Number(p[1]));
        if (p[2] === "0") this.snapFloor = Math.max(this.snapFloor, Number(p[1]));
      }
    }
    this.openWriter(false);
    // An empty store (killed before its first commit) is where it began.
    const reached = this.w.version === 0 ? start : this.w.version;
    const lowest = this.durability === "async" ? start : committed;
    if (reached < lowest || reached > start + s.versions) this.fail(`after the kill the store is at ${reached}; the child had committed ${committed} (from ${start})`);
    const ops = childOps(s.seed, s.versions);
    for (let v = start + 1; v <= reached; v++) {
      for (const op of ops[v - start - 1]!) this.model.apply(op);
      const rec = this.model.commit();
      if (rec.version !== v) this.fail(`the model committed ${rec.version} for the child's ${v}`);
      const keep = this.life.options.keepRecent;
      if (keep !== undefined) this.floor = Math.max(this.floor, v - keep);
    }
    if (this.model.latest > 0 && toHex(this.w.hash) !== this.model.versions.get(reached)?.hash) this.fail(`after the kill, version ${reached} has hash ${toHex(this.w.hash)}, expected ${this.model.versions.get(reached)?.hash}`);
    this.checkAll();
  }

  /**
   * A child writer (sim/full-writer.ts) whose files may grow only `slack` bytes: the commit the disk refuses fails
   * with IO_ERROR or DISK_FULL, and once the limit is lifted the same handle commits it and the rest. After its clean
   * close the store holds every version it committed, with the model's hashes: none lost, none resurrected.
   */
  private async full(s: Extract<Step, { t: "full" }>): Promise<void> {
    await this.settle();
    this.closeWriter();
    const start = this.model.latest === 0 ? this.life.options.initialVersion - 1 : this.model.latest;
    const args = [...scriptArgs(join(here, "full-writer.ts")), this.dir, JSON.stringify({ ...this.life.options, durability: this.durability }), String(s.seed), String(s.versions)];
    // node ignores SIGXFSZ: a write past the limit fails (EFBIG) as on a full disk.
    const child = spawn(process.execPath, args, { cwd: root, stdio: ["pipe", "pipe", "pipe"] });
    // A child that ended early must not make a write to its stdin an unhandled error: its exit status tells.
    child.stdin.on("error", () => undefined);
    const lines: string[] = [];
    let err = "";
    let wake = (): void => undefined;
    createInterface({ input: child.stdout }).on("line", (l) => (lines.push(l), wake()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => (resolve(code), wake())));
    let ended = false;
    void exited.then(() => (ended = true));
    const line = async (re: RegExp): Promise<RegExpExecArray | undefined> => {
      for (;;) {
        for (const l of lines) {
          const m = re.exec(l);
          if (m !== null) return m;
        }
        if (ended) return undefined;
        await new Promise<void>((r) => (wake = r));
      }
    };
    const opened = await line(/^opened \d+ (\d+)$/);
    if (opened === undefined) this.fail(`the full-disk child did not open the store: ${err.slice(0, 2000)}`);
    const limit = Number(opened[1]) + s.slack;
    spawnSync("prlimit", ["--pid", String(child.pid), `--fsize=${limit}:`]);
    child.stdin.write("go\n");
    const full = await line(/^full (\S+) (.*)$|^closed$/);
    if (full?.[1] !== undefined) {
      if (full[1] !== "IO_ERROR" && full[1] !== "DISK_FULL") this.fail(`a commit on a full disk (limit ${limit} B) failed with ${full[1]}: ${JSON.parse(full[2]!) as string}`);
      spawnSync("prlimit", ["--pid", String(child.pid), "--fsize=unlimited:"]);
      child.stdin.write("space\n");
    }
    const code = await exited;
    if (code !== 0 || !lines.includes("closed")) this.fail(`the full-disk child (limit ${limit} B) exited with ${code}: ${lines.slice(-3).join(" | ")} ${err.slice(0, 2000)}`);
    const committed = lines.flatMap((l) => /^committed (\d+)$/.exec(l)?.[1] ?? []).map(Number);
    const ops = childOps(s.seed, s.versions);
    if (committed.length !== ops.length || committed.some((v, i) => v !== start + 1 + i)) this.fail(`the full-disk child committed ${span(committed)} from ${start}`);
    this.openWriter(false);
    if (this.w.version !== start + ops.length) this.fail(`after a full disk and a clean close the store is at ${this.w.version}; the child committed up to ${start + ops.length}`);
    for (const [i, vOps] of ops.entries()) {
      for (const op of vOps) this.model.apply(op);
      const rec = this.model.commit();
      if (rec.version !== start + 1 + i) this.fail(`the model committed ${rec.version} for the child's ${start + 1 + i}`);
      const keep = this.life.options.keepRecent;
      if (keep !== undefined) this.floor = Math.max(this.floor, rec.version - keep);
    }
    this.checkAll();
  }

  /** `verify --all --json` and `info --json` beside the live writer, as an operator runs them. */
  private cli(): void {
    if (this.model.latest === 0) return;
    for (const args of [["verify", this.dir, "--all", "--json"], ["info", this.dir, "--json"]]) {
      const out = this.iavlite(args);
      try {
        JSON.parse(out);
      } catch {
        this.fail(`iavlite ${args[0]} --json printed no single JSON value: ${out.slice(0, 500)}`);
      }
    }
  }

  dispose(): void {
    for (const r of this.readers) r?.store.close();
    try {
      this.tree?.close();
    } catch {
      // the failure already reported is the one that matters
    }
    rmSync(this.dir, { recursive: true, force: true });
    for (const d of this.extra) rmSync(d, { recursive: true, force: true });
  }
}

/** What `fn` throws, or undefined. */
function catching(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  return undefined;
}

/** Throws `e` again when its code is one the check allows (the version went meanwhile); returns it otherwise. */
function rethrowAllowed(e: unknown, allowed: Allowed): unknown {
  if (allowed.includes(codeOf(e) ?? "")) throw e;
  return e;
}

function span(v: number[]): string {
  if (v.length <= 12) return v.join(",");
  return `${v.slice(0, 5).join(",")} … ${v.slice(-5).join(",")} (${v.length})`;
}

/** A step in a line, for logs and shrunk reports. */
export function describe(s: Step): string {
  switch (s.t) {
    case "write":
      return `write ${s.ops.map((o) => (o.v === null ? `-${o.k}` : `${o.k}=${o.v.length}B`)).join(" ")}`;
    case "burst":
      return `burst of ${s.versions.length} commits`;
    default:
      return stepArgs(s);
  }
}
