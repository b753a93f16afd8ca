/**
 * The corruption probe (issue "Never a wrong answer"): copies of one store, each damaged once (4 KiB of random bytes
 * or one flipped byte, in the main file or in the WAL), read through every read path and compared with the model of
 * what was committed. A read may answer right or fail with an `IavlError`; a wrong answer, or SQLite's own error
 * escaping, is a defect. For each copy it also asks whether `verify` (an audit of every version) and SQLite's
 * `PRAGMA integrity_check` find damage, since verify must flag every copy either of them or a read finds damaged.
 *
 * `npx tsx bench/corruption-probe.ts [--copies 100] [--seed 1]`: prints one line per copy that is not simply right,
 * then the counts. test/corruption-probe.test.ts runs a dozen copies.
 * @module
 */
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { toHex, Tree, type ReadonlyTree } from "../src/index.js";
import { copyStore, damageFile, tried, wrongGet, wrongIteration, type Outcome } from "../sim/damage.js";
import { Random } from "../sim/random.js";

/** One damaged copy: what was damaged, how each read path ended, and what found the damage. */
export interface CopyReport {
  damage: string;
  /** Per read path: its outcome, with a word on what was wrong or thrown. */
  paths: Record<string, Outcome>;
  verifyFlags: boolean;
  integrityFlags: boolean;
}

/** What the probe found over all copies. */
export interface ProbeSummary {
  copies: CopyReport[];
  /** Read paths that answered wrong without an error, over all copies. */
  wrong: number;
  /** Read paths that let an error other than an IavlError out. */
  raw: number;
  /** Copies that a read, or integrity_check, found damaged but verify passed. */
  verifyMissed: number;
}

const SAMPLE_VERSIONS = 3;


interface Model {
  /** The state after each of the last versions (key hex → value), by version. */
  states: Map<number, Map<string, Uint8Array>>;
  keys: Uint8Array[];
  latest: number;
}

/** Writes the store: `versions` versions of sets and removes over `keys` keys, values of 1–300 random bytes. */
function build(dir: string, rnd: () => number, keys: number, versions: number): { model: Model; tree: Tree } {
  // Inline commits: the WAL's frames then fall the same way in every run, and a seed damages the same frames (a
  // writer thread's timing moves them, and damage in a WAL's last frame cannot be told from a write cut short).
  const tree = Tree.open(dir, { checkpointInterval: 4, commitJournal: false });
  const names = Array.from({ length: keys }, (_, i) => Buffer.from(`key-${(i * 7919) % keys}-${i}`));
  const state = new Map<string, Uint8Array>();
  const states = new Map<number, Map<string, Uint8Array>>();
  for (let v = 1; v <= versions; v++) {
    const n = v === 1 ? keys : Math.ceil(keys / 20);
    for (let i = 0; i < n; i++) {
      const k = names[v === 1 ? i : Math.floor(rnd() * keys)]!;
      if (v > 1 && rnd() < 0.2) {
        tree.remove(k);
        state.delete(toHex(k));
      } else {
        const value = Buffer.alloc(1 + Math.floor(rnd() * 300));
        for (let j = 0; j < value.length; j++) value[j] = Math.floor(rnd() * 256);
        tree.set(k, value);
        state.set(toHex(k), value);
      }
    }
    tree.commit();
    if (v > versions - SAMPLE_VERSIONS) states.set(v, new Map(state));
  }
  return { model: { states, keys: names, latest: versions }, tree };
}

/** The reads of one version: every key of the model (present and absent) by get, and a whole iteration. */
function readVersion(paths: CopyReport["paths"], name: string, view: () => Pick<ReadonlyTree, "get" | "iterate">, expected: Map<string, Uint8Array>, keys: Uint8Array[]): void {
  paths[`${name} get`] = tried(() => wrongGet(view(), keys, expected));
  paths[`${name} iterate`] = tried(() => wrongIteration(view(), expected));
}

/** Every read path of one copy, the read-only handle's first (a writer may change the file). */
function readCopy(dir: string, model: Model): CopyReport["paths"] {
  const paths: CopyReport["paths"] = {};
  const versions = [...model.states.keys()];
  let ro: ReturnType<typeof Tree.openReadOnly> | undefined;
  paths["open read-only"] = tried(() => {
    ro = Tree.openReadOnly(dir);
    return ro.version === model.latest ? undefined : `version ${ro.version}`;
  });
  if (ro !== undefined) {
    const r = ro;
    for (const v of versions) readVersion(paths, `read-only v${v}`, () => r.at(v), model.states.get(v)!, model.keys);
    paths["history"] = tried(() => {
      for (const k of model.keys.slice(0, 50)) {
        for (const e of r.history(k).entries) {
          const want = model.states.get(e.version)?.get(toHex(k));
          if (model.states.has(e.version) && (e.value === null ? undefined : toHex(e.value)) !== (want === undefined ? undefined : toHex(want))) return `key ${toHex(k)} at ${e.version}`;
        }
      }
      return undefined;
    });
    r.close();
  }
  let t: Tree | undefined;
  paths["open writer"] = tried(() => {
    t = Tree.open(dir);
    return t.version === model.latest ? undefined : `version ${t.version}`;
  });
  if (t !== undefined) {
    const w = t;
    readVersion(paths, "writer latest", () => w, model.states.get(model.latest)!, model.keys);
    try {
      w.close();
    } catch {
      // A writer that cannot close a damaged file has told its reads already.
    }
  }
  return paths;
}

/** Whether an audit of every version finds a fault (or cannot read the store at all). */
function verifyFlags(dir: string): boolean {
  try {
    const ro = Tree.openReadOnly(dir);
    try {
      for (const v of ro.versions()) if (!ro.at(v).audit().ok) return true;
      return false;
    } finally {
      ro.close();
    }
  } catch {
    return true;
  }
}

/** Whether SQLite's own structure check finds the file damaged. */
function integrityFlags(dir: string): boolean {
  try {
    const db = new Database(join(dir, "iavl.sqlite"), { readonly: true, fileMustExist: true });
    try {
      return db.pragma("integrity_check", { simple: true }) !== "ok";
    } finally {
      db.close();
    }
  } catch {
    return true;
  }
}

/** Runs the probe on `copies` damaged copies of one store. */
export async function probe(opts: { copies: number; seed: number; keys?: number; versions?: number; log?: (line: string) => void }): Promise<ProbeSummary> {
  const random = new Random(opts.seed);
  const rnd = (): number => random.next();
  const root = mkdtempSync(join(tmpdir(), "iavlite-probe-"));
  try {
    // Two originals: one closed (everything in the main file), one copied while its writer was open (recent
    // versions still in the WAL).
    const open = join(root, "open");
    const { model, tree } = build(open, rnd, opts.keys ?? 1500, opts.versions ?? 12);
    await tree.flush();
    const withWal = join(root, "with-wal");
    copyStore(open, withWal);
    tree.close();
    const closed = open;
    const walBytes = existsSync(join(withWal, "iavl.sqlite-wal")) ? statSync(join(withWal, "iavl.sqlite-wal")).size : 0;
    opts.log?.(`store: ${model.keys.length} keys, ${model.latest} versions; main file ${statSync(join(closed, "iavl.sqlite")).size} B, WAL of the open copy ${walBytes} B`);

    const reports: CopyReport[] = [];
    for (let i = 0; i < opts.copies; i++) {
      const inWal = walBytes > 0 && rnd() < 0.5;
      const from = inWal || rnd() < 0.5 ? withWal : closed;
      const dir = join(root, `copy-${i}`);
      copyStore(from, dir);
      const kind = rnd() < 0.5 ? "block" : "byte";
      const where = damageFile(join(dir, inWal ? "iavl.sqlite-wal" : "iavl.sqlite"), rnd, kind);
      const report: CopyReport = {
        damage: `${inWal ? "WAL" : from === withWal ? "main file (WAL beside)" : "main file"}: ${where}`,
        paths: {},
        verifyFlags: false,
        integrityFlags: false,
      };
      // integrity_check and verify read the copy as damaged, before any writer could checkpoint the WAL into it.
      const probeDir = join(root, `copy-${i}-checks`);
      copyStore(dir, probeDir);
      report.integrityFlags = integrityFlags(probeDir);
      report.verifyFlags = verifyFlags(probeDir);
      report.paths = readCopy(dir, model);
      reports.push(report);
      rmSync(dir, { recursive: true, force: true });
      rmSync(probeDir, { recursive: true, force: true });
      const bad = Object.entries(report.paths).flatMap(([name, p]) => (p.outcome === "wrong" || p.outcome === "raw" ? [[name, p] as const] : []));
      const refused = Object.values(report.paths).some((p) => p.outcome === "refused");
      if (bad.length > 0 || refused || report.verifyFlags || report.integrityFlags) {
        opts.log?.(
          `copy ${i} (${report.damage}): verify ${report.verifyFlags ? "flags" : "passes"}, integrity_check ${report.integrityFlags ? "flags" : "passes"}` +
            (refused ? "; some reads refused" : "") +
            bad.map(([name, p]) => `; ${name} ${p.outcome.toUpperCase()} (${p.note})`).join(""),
        );
      }
    }
    const all = reports.flatMap((r) => Object.values(r.paths));
    const found = (r: CopyReport): boolean => r.integrityFlags || Object.values(r.paths).some((p) => p.outcome !== "right");
    return {
      copies: reports,
      wrong: all.filter((p) => p.outcome === "wrong").length,
      raw: all.filter((p) => p.outcome === "raw").length,
      verifyMissed: reports.filter((r) => found(r) && !r.verifyFlags).length,
    };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name: string, d: number): number => {
    const i = process.argv.indexOf(`--${name}`);
    return i < 0 ? d : Number(process.argv[i + 1]);
  };
  const s = await probe({ copies: arg("copies", 100), seed: arg("seed", 1), log: (l) => console.log(l) });
  const flagged = s.copies.filter((r) => r.verifyFlags).length;
  const integrity = s.copies.filter((r) => r.integrityFlags).length;
  console.log(
    `${s.copies.length} damaged copies: ${s.wrong} wrong answers, ${s.raw} raw SQLite errors; verify flagged ${flagged}, ` +
      `integrity_check ${integrity}; copies found damaged that verify passed: ${s.verifyMissed}`,
  );
  process.exitCode = s.wrong + s.raw + s.verifyMissed === 0 ? 0 : 1;
}
