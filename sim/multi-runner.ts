/**
 * Runs one multi-store life (multi-life.ts) against a real `MultiTree` folder and checks it after every step against
 * the model (multi-model.ts): every store's kept versions and their contents, the app hash of each version
 * (`commit`, `appHashAt`, readers, the CLI), read-only `MultiReader`s held across commits, prunes and rollbacks
 * (they read the history they refreshed in, or throw VERSION_PRUNED / VERSION_ROLLED_BACK), SIGKILL of a child
 * writer during commits and rollbacks (the folder must reopen at a whole version the child reached), a store rolled
 * back alone, a lost commit marker, and the CLI an operator runs on the folder.
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { tendermintSpec, verifyMembership } from "@confio/ics23";
import { fromHex, IavlError, MultiTree, multiStoreNames, toHex, Tree, type MultiReader, type MultiTreeOptions, type ReadonlyTree } from "../src/index.js";
import { keyBytes, keyHex, type Rec } from "./model.js";
import { catching, codeOf, eq, GONE, show, viewProblem } from "./multi-checks.js";
import { runMultiCli } from "./multi-cli.js";
import { runCrash } from "./multi-crash.js";
import { finishPrunes } from "./finish-prunes.js";
import { describeMulti, type MultiDurability, type MultiLife, type MultiOp, type MultiStep } from "./multi-life.js";
import { MultiModel, type History } from "./multi-model.js";
import { Random } from "./random.js";
import { branchRowsProblem } from "../test/helpers.js";
import { SimFailure, type LifeStats } from "./runner.js";

interface HeldReader {
  ro: MultiReader;
  /** The stores it reads: the folder's as of its last refresh (it takes in stores that joined since it opened). */
  names: string[];
  /** Its version as of its last refresh, and the history it refreshed in. */
  latest: number;
  hist: History;
}

interface HeldViews {
  label: string;
  views: Array<{ name: string; view: ReadonlyTree; rec: Rec }>;
}

/** Runs `life` in a fresh folder; throws {@link SimFailure} at the first step whose check fails. */
export async function runMultiLife(life: MultiLife, log: (line: string) => void = () => undefined): Promise<LifeStats> {
  const run = new MultiRun(life, log);
  try {
    await run.all();
  } finally {
    run.dispose();
  }
  return { steps: life.steps.length, versions: run.model.version, checks: run.checks };
}

/** One life's folder, writer, readers and model; the CLI and crash steps reach it through these members. */
export class MultiRun {
  readonly model: MultiModel;
  readonly dir = mkdtempSync(join(tmpdir(), "iavlite-msim-"));
  readonly r: Random;
  private mt: MultiTree | undefined;
  private durability: MultiDurability;
  private readers: Array<HeldReader | undefined> = [];
  private views: Array<HeldViews | undefined> = [];
  private pending = new Set<Promise<unknown>>();
  /** Versions at or below this may have been pruned in every store (explicitly or automatically). */
  private floor = Number.NEGATIVE_INFINITY;
  /** keepEvery snapshots at or below this may have been pruned (by a prune that kept others). */
  private snapFloor = Number.NEGATIVE_INFINITY;
  /** App hashes of versions at or below this may have been forgotten by the marker (explicit prunes, a lost marker). */
  private appFloor = Number.NEGATIVE_INFINITY;
  /** Versions an explicit prune removed for certain. */
  private gone = new Set<number>();
  /** Rollbacks so far: a prune's outcome counts only in the history it began in. */
  private histories = 0;
  private step = -1;
  private background: IavlError | undefined;
  checks = 0;

  constructor(
    readonly life: MultiLife,
    readonly log: (line: string) => void,
  ) {
    this.model = new MultiModel(life.options.stores);
    this.r = new Random(life.seed ^ 0x5eed);
    this.durability = life.options.durability;
  }

  async all(): Promise<void> {
    this.openWriter();
    for (this.step = 0; this.step < this.life.steps.length; this.step++) {
      const s = this.life.steps[this.step]!;
      this.log(`${this.step}: ${describeMulti(s)}`);
      try {
        await this.run(s);
        const bg = this.background;
        if (bg !== undefined) this.fail(`an automatic prune failed: ${bg.code}: ${bg.message}`);
      } catch (e) {
        if (e instanceof SimFailure) throw e;
        throw new SimFailure(this.step, `${describeMulti(s)} threw ${codeOf(e) ?? (e as Error).name}: ${(e as Error).message}`, { cause: e });
      }
    }
    this.log(`${this.step}: (end) the stored branches`);
    await this.checkBranchRows();
  }

  /** As the single-store life ends (runner.ts), for every store of the folder. */
  private async checkBranchRows(): Promise<void> {
    await this.closeWriter();
    const mt = MultiTree.open(this.dir, { ...this.openOptions(), keepRecent: undefined });
    try {
      await finishPrunes(mt, this.model.order, this.life.options.keepEvery);
    } finally {
      mt.close();
    }
    for (const name of this.model.order) {
      const problem = branchRowsProblem(join(this.dir, "stores", name));
      if (problem !== undefined) this.fail(`store ${name}: ${problem}`);
    }
    this.openWriter();
  }

  fail(message: string): never {
    throw new SimFailure(this.step, message);
  }

  get w(): MultiTree {
    return this.mt!;
  }

  /** Opens the writer with the model's stores; `expect`: at the model's version and app hash. */
  openWriter(expect = true): void {
    this.mt = MultiTree.open(this.dir, this.openOptions());
    if (expect && !this.atModel()) {
      this.fail(`reopened at ${this.w.version} (app hash ${toHex(this.w.appHash)}), the model is at ${this.model.version} (${this.model.currentAppHash()})`);
    }
  }

  /**
   * The options the writer opens with: the life's, the model's stores (those that have not committed yet in
   * `addStores`), the durability of the last reopen.
   */
  openOptions(): MultiTreeOptions & { stores: string[] } {
    const o = this.life.options;
    return {
      stores: this.model.order,
      addStores: this.model.order.filter((n) => !this.model.started(n)),
      checkpointInterval: o.checkpointInterval,
      keepRecent: o.keepRecent,
      keepEvery: o.keepEvery,
      memoryBudgetMiB: o.memoryBudgetMiB,
      shardSize: o.shardSize,
      durability: this.durability,
      // Reported at the end of the step: thrown here, it would escape the event loop's callback.
      onBackgroundError: (e) => (this.background ??= e),
    };
  }

  /**
   * An operator's typo: the writer's stores with the first one misspelled must be refused with STORES_MISMATCH, even
   * with the misspelling in addStores, and leave the folder's stores as they were.
   */
  private refuseTypo(): void {
    const [first, ...rest] = this.model.order;
    const typo = `${first!}x`;
    const before = multiStoreNames(this.dir);
    const o = this.openOptions();
    const added = (o.addStores ?? []).filter((n) => n !== first);
    for (const addStores of [added, [...added, typo]]) {
      const e = catching(() => MultiTree.open(this.dir, { ...o, stores: [typo, ...rest], addStores }).close());
      if (codeOf(e) !== "STORES_MISMATCH") this.fail(`opening with store ${first!} misspelled ${typo} gave ${e === undefined ? "a writer" : `${codeOf(e) ?? (e as Error).name}: ${(e as Error).message}`}, not STORES_MISMATCH`);
    }
    const after = multiStoreNames(this.dir);
    if (JSON.stringify(after) !== JSON.stringify(before)) this.fail(`a refused open changed the folder's stores from ${String(before)} to ${String(after)}`);
  }

  /** Whether the writer is at the model's version, with its app hash. */
  atModel(): boolean {
    return this.w.version === this.model.version && toHex(this.w.appHash) === this.model.currentAppHash();
  }

  /** Waits for the prunes in flight, then closes the writer (its uncommitted work is gone). */
  async closeWriter(settle = true): Promise<void> {
    if (settle) await this.settle();
    this.mt?.close();
    this.mt = undefined;
    this.model.discardWork();
  }

  private async run(s: MultiStep): Promise<void> {
    switch (s.t) {
      case "write":
        for (const op of s.ops) this.apply(op);
        return;
      case "commit":
        this.commit();
        return;
      case "burst":
        for (const ops of s.versions) {
          for (const op of ops) this.apply(op);
          this.commit();
        }
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
        // Without settling: a prune in flight is cut short by the close.
        await this.closeWriter(false);
        this.durability = s.durability;
        if (s.add) this.model.add();
        this.refuseTypo();
        this.openWriter();
        this.checkAll();
        return;
      case "rollback":
        return this.rollback(s.pick, s.bad);
      case "store-rollback":
        return this.storeRollback(s.pick, s.store);
      case "lose-marker":
        return this.loseMarker();
      case "reader":
        return this.reader(s.slot, s.action, s.pick);
      case "view":
        return this.openViews(s);
      case "view-read":
        return this.readViews(s.slot);
      case "app-hash":
        this.checkAppHash(1 + Math.floor(s.pick * (this.model.version + 1)));
        return;
      case "crash":
        return runCrash(this, s);
      case "cli":
        return runMultiCli(this, s);
      case "check":
        this.checkAll();
        return;
    }
  }

  private apply(op: MultiOp): void {
    const name = this.model.nameOf(op.s);
    const t = this.w.tree(name);
    const key = keyBytes(op.k);
    if (op.v === null) {
      const had = t.remove(key);
      const model = this.model.store(name).workingKeys().includes(op.k);
      if (had !== model) this.fail(`${name}: remove(${keyHex(op.k)}) said ${had}, the model ${model}`);
    } else t.set(key, op.v);
    this.model.apply(op);
    const got = t.get(key);
    if (!eq(got, op.v === null ? undefined : op.v)) this.fail(`${name}: get(${keyHex(op.k)}) of the working state gave ${show(got)}, expected ${show(op.v)}`);
  }

  private commit(): void {
    const c = this.w.commit();
    const m = this.model.commit();
    if (c.version !== m.version || toHex(c.appHash) !== m.appHash) {
      this.fail(`commit gave version ${c.version} app hash ${toHex(c.appHash)}, the model ${m.version} ${m.appHash}`);
    }
    for (const [name, h] of m.hashes) {
      const got = c.hashes.get(name);
      if (got === undefined || toHex(got) !== h) this.fail(`commit ${c.version}: store ${name} has hash ${got === undefined ? "none" : toHex(got)}, the model ${h}`);
    }
    this.committed(c.version);
  }

  /** Notes that `version` was committed (automatic pruning may now take versions below it). */
  committed(version: number): void {
    const keep = this.life.options.keepRecent;
    if (keep !== undefined) this.floor = Math.max(this.floor, version - keep);
  }

  /** Notes an explicit prune of every store to `upTo`, keeping snapshots of `keepEvery`, that may have run. */
  pruning(upTo: number, keepEvery: number | undefined): void {
    this.floor = Math.max(this.floor, upTo);
    this.appFloor = Math.max(this.appFloor, upTo);
    if (keepEvery !== this.life.options.keepEvery) this.snapFloor = Math.max(this.snapFloor, upTo);
  }

  /** Notes an explicit prune to `upTo` that ran whole while `latest` was the latest version. */
  pruned(upTo: number, latest: number, keepEvery: number | undefined): void {
    for (const v of this.model.appHashes.keys()) if (v <= upTo && v < latest && !(keepEvery !== undefined && v % keepEvery === 0)) this.gone.add(v);
  }

  /** Notes that the folder was rolled back to `to`. */
  rolledBack(to: number): void {
    this.model.rollback(to);
    this.histories++;
    this.floor = Math.min(this.floor, to);
    this.snapFloor = Math.min(this.snapFloor, to);
    this.appFloor = Math.min(this.appFloor, to);
    for (const v of [...this.gone]) if (v > to) this.gone.delete(v);
  }

  /** Notes that the marker's app hashes of versions up to `upTo` may be gone (it was rebuilt from the stores). */
  markerRebuilt(upTo: number): void {
    this.appFloor = Math.max(this.appFloor, upTo);
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

  async settle(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  private async prune(s: Extract<MultiStep, { t: "prune" }>): Promise<void> {
    const latest = this.model.version;
    const firsts = this.model.order.filter((n) => this.model.started(n)).map((n) => this.w.tree(n).versions()[0] ?? latest);
    if (latest === 0 || firsts.length === 0) return;
    const first = Math.min(...firsts);
    const upTo = first + Math.floor(s.pick * (latest - first + 1));
    const passed = s.keepEvery === "other" ? s.other : undefined;
    // MultiTree.prune keeps the open option's snapshots unless told another keepEvery.
    const ke = passed ?? this.life.options.keepEvery;
    this.pruning(upTo, ke);
    const history = this.histories;
    const p = this.w.prune(upTo, { keepEvery: passed }).then(() => {
      if (this.histories === history) this.pruned(upTo, latest, ke);
    });
    const t = this.track(p);
    if (s.wait) {
      await t;
      this.checkAll();
    }
  }

  /** The versions every store of the folder keeps, read with a reader (the writer may be closed). */
  keptEverywhere(): number[] {
    const lists = this.keptByStore().map((l) => new Set(l));
    return [...lists[0]!].filter((v) => lists.every((l) => l.has(v))).sort((a, b) => a - b);
  }

  /** The oldest version any store of the folder keeps (the latest when none keeps one), read with a reader. */
  firstKept(): number {
    return Math.min(...this.keptByStore().map((l) => l[0] ?? this.model.version));
  }

  private keptByStore(): number[][] {
    const ro = MultiTree.openReadOnly(this.dir);
    try {
      return ro.names.map((n) => ro.store(n).versions());
    } finally {
      ro.close();
    }
  }

  private async rollback(pick: number, bad: boolean): Promise<void> {
    await this.closeWriter();
    const kept = this.keptEverywhere();
    if (bad) this.badRollback(kept);
    if (kept.length > 0) {
      const to = kept[Math.floor(pick * kept.length)]!;
      const done = MultiTree.rollback(this.dir, to);
      const want = this.model.appHashes.get(to);
      if (done.version !== to || toHex(done.appHash) !== want) this.fail(`MultiTree.rollback(${to}) gave version ${done.version} app hash ${toHex(done.appHash)}, the model ${want}`);
      this.rolledBack(to);
    }
    this.openWriter();
    this.checkAll();
  }

  /** A rollback the folder must refuse, changing nothing: after the last version, or to one some store lacks. */
  private badRollback(kept: number[]): void {
    const lacking = [...this.model.appHashes.keys()].filter((v) => !kept.includes(v));
    const to = lacking.length > 0 && this.r.chance(0.6) ? this.r.pick(lacking) : this.model.version + 1;
    const code = codeOf(catching(() => MultiTree.rollback(this.dir, to)));
    const allowed = to > this.model.version ? ["VERSION_NOT_FOUND"] : ["VERSION_PRUNED", "VERSION_NOT_FOUND"];
    if (code === undefined || !allowed.includes(code)) this.fail(`MultiTree.rollback(${to}) to a version not kept everywhere gave ${code ?? "no error"}, expected ${allowed.join(" or ")}`);
  }

  /** One store rolled back alone: the folder must be refused (CORRUPT), and MultiTree.rollback must repair it. */
  private async storeRollback(pick: number, store: number): Promise<void> {
    await this.closeWriter();
    const kept = this.keptEverywhere();
    if (kept.length > 0) {
      const to = kept[Math.floor(pick * kept.length)]!;
      const name = this.model.nameOf(store);
      Tree.rollback(join(this.dir, "stores", name), to);
      if (to < this.model.version) {
        const e = catching(() => this.openWriter(false));
        if (e === undefined) this.fail(`MultiTree.open opened a folder whose store ${name} was rolled back alone to ${to} (the others at ${this.model.version})`);
        if (codeOf(e) !== "CORRUPT") throw e;
        const done = MultiTree.rollback(this.dir, to);
        if (toHex(done.appHash) !== this.model.appHashes.get(to)) this.fail(`the repairing rollback to ${to} gave app hash ${toHex(done.appHash)}, the model ${this.model.appHashes.get(to)}`);
        this.rolledBack(to);
      }
    }
    this.openWriter();
    this.checkAll();
  }

  /** The marker's files deleted with the writer closed: the stores agree, so open rebuilds it. */
  private async loseMarker(): Promise<void> {
    await this.closeWriter();
    // A reader would go on reading the deleted file: readers are the operator's to restart after such a loss.
    for (const [i, h] of this.readers.entries()) {
      h?.ro.close();
      this.readers[i] = undefined;
    }
    for (const f of ["commits.sqlite", "commits.sqlite-wal", "commits.sqlite-shm"]) rmSync(join(this.dir, f), { force: true });
    this.markerRebuilt(this.model.version);
    this.openWriter();
    this.checkAll();
  }

  /** Whether store `name` must still hold version `v` of this history. */
  mustKeep(name: string, v: number): boolean {
    if (this.model.rec(name, v) === undefined) return false;
    const ke = this.life.options.keepEvery;
    return v === this.model.version || v > this.floor || (ke !== undefined && v % ke === 0 && v > this.snapFloor);
  }

  /** Whether the marker must still give the app hash of version `v`. */
  private mustKeepApp(v: number): boolean {
    if (!this.model.appHashes.has(v)) return false;
    return v === this.model.version || v > this.appFloor || this.model.order.every((n) => this.mustKeep(n, v));
  }

  /** Checks every store's kept versions (a sample of them whole), app hashes and an audit against the model. */
  checkAll(): void {
    this.checks++;
    const w = this.w;
    if (!this.atModel()) this.fail(`the writer is at ${w.version} (app hash ${toHex(w.appHash)}), the model at ${this.model.version} (${this.model.currentAppHash()})`);
    for (const name of this.model.order) {
      const t = w.tree(name);
      const m = this.model.store(name);
      if (t.version !== m.latest) this.fail(`store ${name} is at ${t.version}, the model at ${m.latest}`);
      const kept = t.versions();
      if (!this.model.started(name)) {
        if (kept.length > 0) this.fail(`store ${name} keeps ${kept.join(",")} before its first commit`);
        continue;
      }
      if (kept[kept.length - 1] !== this.model.version) this.fail(`store ${name}: the latest kept is ${kept[kept.length - 1]}, the model's ${this.model.version}`);
      const keptSet = new Set(kept);
      for (const v of kept) {
        if (this.model.rec(name, v) === undefined) this.fail(`store ${name} keeps version ${v}, never committed in this history`);
        if (this.gone.has(v)) this.fail(`store ${name} keeps version ${v} after a prune that removed it (kept: ${span(kept)})`);
      }
      for (const v of m.versions.keys()) {
        if (this.mustKeep(name, v) && !keptSet.has(v)) this.fail(`store ${name}: version ${v} is gone but must be kept (kept: ${span(kept)}; floor ${this.floor}, snapshots ${this.snapFloor})`);
      }
      const sample = new Set([this.model.version, ...Array.from({ length: 3 }, () => this.r.pick(kept))]);
      for (const v of sample) {
        // An automatic prune runs beside the checks: a version it may take can go while it is read, and must say so.
        this.checkView(() => t.at(v), this.model.rec(name, v)!, `store ${name} at ${v}`, this.mustKeep(name, v) ? [] : ["VERSION_PRUNED"]);
      }
    }
    const versions = [...this.model.appHashes.keys()];
    for (let i = 0; i < Math.min(4, versions.length); i++) this.checkAppHash(this.r.pick(versions));
    this.checkAppHash(this.model.version + 1);
    const started = this.model.order.filter((n) => this.model.started(n));
    if (started.length > 0) {
      const name = this.r.pick(started);
      const report = w.tree(name).at(this.model.version).audit();
      if (!report.ok) this.fail(`the audit of ${name} at ${this.model.version} found ${report.faults.length} fault(s): ${JSON.stringify(report.faults[0])}`);
    }
  }

  /** Checks a view of one store against `rec`; false when it threw a code in `allowed` (the version is gone). */
  private checkView(of: ReadonlyTree | (() => ReadonlyTree), rec: Rec, label: string, allowed: readonly string[]): boolean {
    try {
      const problem = viewProblem(typeof of === "function" ? of() : of, rec, this.r);
      if (problem !== undefined) this.fail(`${label}: ${problem}`);
      return true;
    } catch (e) {
      if (e instanceof SimFailure) throw e;
      const code = codeOf(e);
      if (code !== undefined && allowed.includes(code)) return false;
      this.fail(`${label}: threw ${code ?? (e as Error).name}: ${(e as Error).message}`);
    }
  }

  /** The writer's `appHashAt(v)`: the model's app hash, or VERSION_NOT_FOUND where the marker may have forgotten it. */
  private checkAppHash(v: number): void {
    const want = this.model.appHashes.get(v);
    let got: string | undefined;
    let err: unknown;
    try {
      got = toHex(this.w.appHashAt(v));
    } catch (e) {
      err = e;
    }
    if (got !== undefined) {
      if (want === undefined) this.fail(`appHashAt(${v}) gave ${got}, but ${v} is no version of this history (latest ${this.model.version})`);
      if (got !== want) this.fail(`appHashAt(${v}) gave ${got}, the model ${want}`);
      return;
    }
    if (codeOf(err) !== "VERSION_NOT_FOUND") this.fail(`appHashAt(${v}) threw ${codeOf(err) ?? (err as Error).name}: ${(err as Error).message}`);
    if (this.mustKeepApp(v)) this.fail(`appHashAt(${v}) threw VERSION_NOT_FOUND, but its app hash must be kept (app floor ${this.appFloor})`);
  }

  private reader(slot: number, action: "open" | "refresh" | "read" | "close", pick: number): void {
    const held = this.readers[slot];
    if (action === "open") {
      if (held !== undefined) return;
      const ro = MultiTree.openReadOnly(this.dir);
      this.readers[slot] = { ro, names: [], latest: 0, hist: this.model.snapshot() };
      this.refreshed(slot, ro.latest);
      return;
    }
    if (held === undefined) return;
    if (action === "close") {
      held.ro.close();
      this.readers[slot] = undefined;
    } else if (action === "refresh") this.refreshed(slot, held.ro.refresh());
    else this.readerRead(slot, held, pick);
  }

  /** A reader opened or refreshed: at the model's version (a store not committed yet holds none back), every store. */
  private refreshed(slot: number, latest: number): void {
    const held = this.readers[slot]!;
    if (latest !== this.model.version) this.fail(`reader ${slot} refreshed to ${latest}, expected ${this.model.version}`);
    held.names = [...held.ro.names];
    const want = [...this.model.order].sort();
    if (held.names.join() !== want.join()) this.fail(`reader ${slot} reads stores ${held.names.join(",")}, the folder has ${want.join(",")}`);
    held.latest = latest;
    held.hist = this.model.snapshot();
  }

  /** A version of the reader's history, at most its latest: the latest when `pick` < 0.4, else any. */
  private readerVersion(held: HeldReader, pick: number): number | undefined {
    if (held.latest === 0) return undefined;
    const versions = [...held.hist.appHashes.keys()].filter((x) => x <= held.latest);
    return pick < 0.4 ? held.latest : versions[Math.floor(((pick - 0.4) / 0.6) * versions.length)];
  }

  /** What a reader's read of `rec` (store `name`, version `v`) may throw: nothing while it is the same version and kept. */
  private readerAllowed(name: string, v: number, rec: Rec): readonly string[] {
    return this.model.rec(name, v) === rec && this.mustKeep(name, v) ? [] : GONE;
  }

  /**
   * Reads each store of a held reader at a version of the history it refreshed in, its app hash and an app-level
   * proof: all of that history, or VERSION_PRUNED / VERSION_ROLLED_BACK.
   */
  private readerRead(slot: number, held: HeldReader, pick: number): void {
    const v = this.readerVersion(held, pick);
    if (v === undefined) return;
    const label = `reader ${slot} (refreshed at ${held.latest})`;
    let same = true;
    for (const name of held.names) {
      const rec = held.hist.recs.get(name)?.get(v);
      if (rec === undefined) continue;
      same &&= this.model.rec(name, v) === rec;
      this.checkView(() => held.ro.at(name, v), rec, `${label}: store ${name} at ${v}`, this.readerAllowed(name, v, rec));
    }
    const want = held.hist.appHashes.get(v)!;
    const holders = held.names.filter((n) => held.hist.recs.get(n)?.has(v) === true);
    // A reader checks the version in every store, so a version any store may have pruned may throw, marker or not.
    const allowed = same && holders.every((n) => this.mustKeep(n, v)) ? [] : GONE;
    this.readerTry(label, `appHashAt(${v})`, allowed, () => {
      const got = toHex(held.ro.appHashAt(v)!);
      if (got !== want) this.fail(`${label}: appHashAt(${v}) gave ${got}, expected ${want}${same ? "" : " (of the history it refreshed in)"}`);
    });
    const name = this.r.pick(holders);
    this.readerTry(label, `appProof(${v}, ${name})`, allowed, () => {
      const proof = held.ro.appProof(v, name);
      const storeHash = held.hist.recs.get(name)!.get(v)!.hash;
      if (!verifyMembership(proof, tendermintSpec, fromHex(want), new TextEncoder().encode(name), fromHex(storeHash))) {
        this.fail(`${label}: the app proof of store ${name} at ${v} does not verify against app hash ${want}`);
      }
    });
  }

  /** Runs a reader's read `what`; a store error fails the life unless its code is in `allowed`. */
  private readerTry(label: string, what: string, allowed: readonly string[], read: () => void): void {
    try {
      read();
    } catch (e) {
      if (e instanceof SimFailure) throw e;
      const code = codeOf(e);
      if (code === undefined || !allowed.includes(code)) this.fail(`${label}: ${what} threw ${code ?? (e as Error).name}: ${(e as Error).message}`);
    }
  }

  private openViews(s: Extract<MultiStep, { t: "view" }>): void {
    const views: HeldViews["views"] = [];
    if (s.from === "writer") {
      const started = this.model.order.filter((n) => this.model.started(n));
      const lists = started.map((n) => new Set(this.w.tree(n).versions()));
      const kept = [...(lists[0] ?? [])].filter((v) => lists.every((l) => l.has(v)));
      if (kept.length === 0) return;
      const v = kept[Math.floor(s.pick * kept.length)]!;
      for (const name of started) {
        const rec = this.model.rec(name, v)!;
        try {
          views.push({ name, view: this.w.tree(name).at(v), rec });
        } catch (e) {
          // Pruned since it was listed (an automatic prune runs beside).
          if (this.mustKeep(name, v) || codeOf(e) !== "VERSION_PRUNED") throw e;
        }
      }
      this.views[s.slot] = { label: `a view of the writer at ${v}`, views };
      return;
    }
    const held = this.readers[s.slot];
    if (held === undefined) return;
    const v = this.readerVersion(held, s.pick);
    if (v === undefined) return;
    for (const name of held.names) {
      const rec = held.hist.recs.get(name)?.get(v);
      if (rec === undefined) continue;
      try {
        views.push({ name, view: held.ro.at(name, v), rec });
      } catch (e) {
        const code = codeOf(e);
        if (code === undefined || !this.readerAllowed(name, v, rec).includes(code)) this.fail(`reader ${s.slot}: at(${name}, ${v}) threw ${code ?? (e as Error).name}: ${(e as Error).message}`);
      }
    }
    this.views[s.slot] = { label: `a view of reader ${s.slot} (refreshed at ${held.latest}) at ${v}`, views };
  }

  private readViews(slot: number): void {
    const held = this.views[slot];
    if (held === undefined) return;
    for (const { name, view, rec } of held.views) {
      if (!this.checkView(view, rec, `${held.label}: store ${name}`, [...GONE, "CLOSED"])) {
        this.views[slot] = undefined;
        return;
      }
    }
  }

  dispose(): void {
    for (const h of this.readers) h?.ro.close();
    try {
      this.mt?.close();
    } catch {
      // the failure already reported is the one that matters
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function span(v: number[]): string {
  if (v.length <= 12) return v.join(",");
  return `${v.slice(0, 5).join(",")} … ${v.slice(-5).join(",")} (${v.length})`;
}
