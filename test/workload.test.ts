import { createHash } from "node:crypto";
import { describe, it, expect } from "vitest";
import {
  BANK,
  MIXED,
  Rng,
  Workload,
  drawLength,
  growTo,
  mixedProfiles,
  type Change,
  type StoreProfile,
} from "../bench/workload.js";

/** MIXED with a small initial load so tests stay fast; per-version behaviour is unchanged. */
function smallMixed(initialSize = 300): StoreProfile[] {
  return MIXED.map((p) => ({ ...p, initialSize }));
}

function digest(changes: Iterable<Change>): string {
  const h = createHash("sha256");
  const len = Buffer.alloc(4);
  for (const c of changes) {
    h.update(c.store);
    len.writeUInt32LE(c.key.length);
    h.update(len);
    h.update(c.key);
    h.update(c.delete ? "D" : "S");
    if (c.value !== undefined) {
      len.writeUInt32LE(c.value.length);
      h.update(len);
      h.update(c.value);
    }
  }
  return h.digest("hex");
}

function run(profiles: StoreProfile[], seed: number, versions: number): string[] {
  const w = new Workload(profiles, seed);
  const out = [digest(w.initial())];
  for (let v = 0; v < versions; v++) out.push(digest(w.nextVersion()));
  return out;
}

const id = (key: Uint8Array): string => Buffer.from(key).toString("hex");

// Exact length distribution of iavl-bench's rule (trunc(N(m, s)); if < 1, trunc(N(m, trunc(m/3))); clamp 1).
function erf(x: number): number {
  // Abramowitz & Stegun 7.1.26, |error| < 1.5e-7.
  const t = 1 / (1 + 0.3275911 * Math.abs(x));
  const y =
    1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-x * x);
  return x >= 0 ? y : -y;
}
function cdf(x: number, m: number, s: number): number {
  if (s === 0) return x >= m ? 1 : 0;
  return 0.5 * (1 + erf((x - m) / (s * Math.SQRT2)));
}
/** Mean and variance of trunc(N(m, s)) restricted to values >= 1, plus P(value < 1). */
function truncatedPart(m: number, s: number): { p: number; e1: number; e2: number } {
  let e1 = 0;
  let e2 = 0;
  const hi = Math.ceil(m + 12 * s + 2);
  for (let k = 1; k <= hi; k++) {
    const pk = cdf(k + 1, m, s) - cdf(k, m, s);
    e1 += pk * k;
    e2 += pk * k * k;
  }
  return { p: cdf(1, m, s), e1, e2 };
}
function lengthMoments(m: number, s: number): { mean: number; sd: number } {
  const first = truncatedPart(m, s);
  const second = truncatedPart(m, Math.trunc(m / 3));
  const e1 = first.e1 + first.p * (second.e1 + second.p * 1);
  const e2 = first.e2 + first.p * (second.e2 + second.p * 1);
  return { mean: e1, sd: Math.sqrt(e2 - e1 * e1) };
}

describe("profiles", () => {
  it("MIXED and BANK carry the spec table", () => {
    expect(MIXED.map((p) => [p.name, p.keyMean, p.keyStdDev, p.valueMean, p.valueStdDev, p.initialSize, p.changesPerVersion, p.deleteFraction])).toEqual([
      ["bank", 56, 3, 100, 1200, 35_000, 1840, 0.25],
      ["lockup", 56, 3, 1936, 29261, 35_000, 363, 0.29],
      ["staking", 24, 2, 12263, 22967, 35_000, 305, 0.25],
    ]);
    expect(BANK).toEqual(MIXED[0]);
  });

  it("growth follows iavl-bench's (FinalSize - InitialSize) / (Versions - 1)", () => {
    const [bank, lockup, staking] = mixedProfiles(10_000);
    expect(bank?.growthPerVersion).toBeCloseTo((2_200_200 - 35_000) / 9_999, 9);
    expect(lockup?.growthPerVersion).toBeCloseTo((2_600_200 - 35_000) / 9_999, 9);
    expect(staking?.growthPerVersion).toBeCloseTo((1_600_696 - 35_000) / 9_999, 9);
    expect(mixedProfiles(101, 0.05)[0]?.growthPerVersion).toBeCloseTo((110_010 - 35_000) / 100, 9);
  });
});

describe("determinism", () => {
  it("same seed gives identical changes", () => {
    expect(run(smallMixed(100), 42, 1)).toEqual(run(smallMixed(100), 42, 1));
  });

  it("different seeds give different changes", () => {
    const a = run(smallMixed(100), 1, 1);
    const b = run(smallMixed(100), 2, 1);
    for (let i = 0; i < a.length; i++) expect(a[i]).not.toEqual(b[i]);
    // The high half of a seed matters too.
    expect(run(smallMixed(50), 7, 0)).not.toEqual(run(smallMixed(50), 7 + 2 ** 32, 0));
  });

  it("the PRNG is reproducible and fill() matches word output little-endian", () => {
    const a = new Rng(123);
    const b = new Rng(123);
    const bytes = new Uint8Array(11);
    a.fill(bytes);
    const w0 = b.nextInt32() >>> 0;
    const w1 = b.nextInt32() >>> 0;
    const w2 = b.nextInt32() >>> 0;
    const expected = Buffer.alloc(12);
    expected.writeUInt32LE(w0, 0);
    expected.writeUInt32LE(w1, 4);
    expected.writeUInt32LE(w2, 8);
    expect(Buffer.from(bytes)).toEqual(expected.subarray(0, 11));
    expect(a.nextInt32()).toBe(b.nextInt32());
  });
});

describe("lengths", () => {
  it("drawLength matches the exact distribution of the iavl-bench rule for every profile field", () => {
    const rng = new Rng(9);
    const n = 20_000;
    for (const p of MIXED) {
      for (const [m, s] of [
        [p.keyMean, p.keyStdDev],
        [p.valueMean, p.valueStdDev],
      ] as const) {
        let sum = 0;
        let sumSq = 0;
        let min = Infinity;
        let integers = true;
        for (let i = 0; i < n; i++) {
          const len = drawLength(rng, m, s);
          sum += len;
          sumSq += len * len;
          min = Math.min(min, len);
          integers &&= Number.isInteger(len);
        }
        expect(integers).toBe(true);
        const mean = sum / n;
        const sd = Math.sqrt(sumSq / n - mean * mean);
        const want = lengthMoments(m, s);
        expect(min).toBeGreaterThanOrEqual(1);
        // 5 standard errors of the mean; sd within 10 %.
        expect(Math.abs(mean - want.mean)).toBeLessThan((5 * want.sd) / Math.sqrt(n));
        expect(Math.abs(sd - want.sd) / want.sd).toBeLessThan(0.1);
      }
    }
  });

  it("keys and values in generated changes follow the profile", () => {
    const profile: StoreProfile = { ...BANK, initialSize: 4000 };
    const w = new Workload([profile], 5);
    let keySum = 0;
    let valueSum = 0;
    let count = 0;
    for (const c of w.initial()) {
      keySum += c.key.length;
      valueSum += c.value?.length ?? 0;
      count++;
    }
    const k = lengthMoments(profile.keyMean, profile.keyStdDev);
    const v = lengthMoments(profile.valueMean, profile.valueStdDev);
    expect(count).toBe(4000);
    expect(Math.abs(keySum / count - k.mean)).toBeLessThan((5 * k.sd) / Math.sqrt(count));
    expect(Math.abs(valueSum / count - v.mean)).toBeLessThan((5 * v.sd) / Math.sqrt(count));
    // Nominal vs realised: the redraw rule lifts bank's mean value length from 100 to ~575.
    expect(v.mean).toBeGreaterThan(500);
  });

  it("long values are not all alike (pool copies start at random offsets behind a fresh head)", () => {
    const lockup = MIXED.find((p) => p.name === "lockup");
    if (lockup === undefined) throw new Error("no lockup row");
    const w = new Workload([{ ...lockup, initialSize: 200 }], 3);
    const seen = new Set<string>();
    let long = 0;
    for (const c of w.initial()) {
      if (c.value !== undefined && c.value.length > 2048) {
        long++;
        seen.add(Buffer.from(c.value.subarray(0, 16)).toString("hex"));
        seen.add(Buffer.from(c.value.subarray(1024, 1040)).toString("hex"));
      }
    }
    expect(long).toBeGreaterThan(50);
    expect(seen.size).toBe(2 * long);
  });
});

describe("versions", () => {
  it("initial load is creates only, all stores interleaved, initialSize each", () => {
    const w = new Workload(smallMixed(200), 11);
    const changes = [...w.initial()];
    expect(w.version).toBe(1);
    expect(changes).toHaveLength(600);
    expect(changes.every((c) => !c.delete && c.value !== undefined)).toBe(true);
    expect(new Set(changes.slice(0, 30).map((c) => c.store)).size).toBe(3);
    for (const p of smallMixed(200)) {
      expect(changes.filter((c) => c.store === p.name)).toHaveLength(200);
      expect(w.liveCount(p.name)).toBe(200);
    }
  });

  it("per-version counts follow the formula; updates and deletes hit live keys; creates are new", () => {
    const profiles = smallMixed(400);
    const w = new Workload(profiles, 17);
    const model = new Map<string, Set<string>>(profiles.map((p) => [p.name, new Set<string>()]));
    for (const c of w.initial()) model.get(c.store)?.add(id(c.key));
    const acc = new Map<string, number>(profiles.map((p) => [p.name, 0]));

    for (let v = 2; v <= 4; v++) {
      const changes = w.nextVersion();
      expect(w.version).toBe(v);
      const seen = new Map<string, { creates: number; updates: number; deletes: number }>();
      for (const p of profiles) seen.set(p.name, { creates: 0, updates: 0, deletes: 0 });
      let deleteOfDead = 0;
      let badShape = 0;
      for (const c of changes) {
        const live = model.get(c.store);
        const counts = seen.get(c.store);
        if (live === undefined || counts === undefined) throw new Error(`unexpected store ${c.store}`);
        const k = id(c.key);
        if (c.delete) {
          if (c.value !== undefined) badShape++;
          if (!live.delete(k)) deleteOfDead++;
          counts.deletes++;
        } else {
          if (!(c.value instanceof Uint8Array)) badShape++;
          if (live.has(k)) counts.updates++;
          else {
            live.add(k);
            counts.creates++;
          }
        }
      }
      expect(deleteOfDead).toBe(0);
      expect(badShape).toBe(0);
      for (const p of profiles) {
        const deletes = Math.floor(p.deleteFraction * p.changesPerVersion);
        const a = (acc.get(p.name) ?? 0) + (p.growthPerVersion ?? 0);
        const growth = Math.floor(a);
        acc.set(p.name, a - growth);
        const want = { creates: deletes + growth, updates: p.changesPerVersion - deletes, deletes };
        // A create that reused a live key would show up here as an extra update.
        expect(seen.get(p.name)).toEqual(want);
        expect(w.lastPlan.find((x) => x.store === p.name)).toEqual({ store: p.name, ...want });
        const live = model.get(p.name) ?? new Set<string>();
        expect(w.liveCount(p.name)).toBe(live.size);
      }
    }
    // Spot-check the spec numbers: bank 460 deletes / 1380 updates, lockup 105 / 258, staking 76 / 229.
    expect(w.lastPlan.map((x) => [x.store, x.deletes, x.updates])).toEqual([
      ["bank", 460, 1380],
      ["lockup", 105, 258],
      ["staking", 76, 229],
    ]);
    // The generator's live set agrees with the model key for key.
    for (const p of profiles) {
      const live = model.get(p.name) ?? new Set<string>();
      const mine = w.liveKeys(p.name);
      expect(new Set(mine.map(id))).toEqual(live);
      expect(mine.every((k) => w.isLive(p.name, k))).toBe(true);
    }
    expect(w.isLive("bank", new Uint8Array([1, 2, 3]))).toBe(false);
  });

  it("fractional growth accumulates like iavl-bench's createAccumulator", () => {
    const p: StoreProfile = { ...BANK, name: "s", initialSize: 50, changesPerVersion: 8, deleteFraction: 0.25, growthPerVersion: 2.5 };
    const w = new Workload([p], 1);
    for (const _ of w.initial());
    const creates: number[] = [];
    for (let i = 0; i < 6; i++) {
      w.nextVersion();
      creates.push(w.lastPlan[0]?.creates ?? -1);
    }
    expect(creates).toEqual([4, 5, 4, 5, 4, 5]);
    expect(w.liveCount("s")).toBe(50 + 15);
  });

  it("deletes and updates on an empty store become creates", () => {
    const p: StoreProfile = { ...BANK, name: "e", initialSize: 0, changesPerVersion: 4, deleteFraction: 1, growthPerVersion: 0 };
    const w = new Workload([p], 1);
    const v = w.nextVersion();
    expect(v[0]?.delete).toBe(false);
    // 4 deletes + 4 creates planned; every delete drawn before a key exists turns into a create.
    expect(v.filter((c) => c.delete).length + v.filter((c) => !c.delete).length).toBe(8);
    expect(w.liveCount("e")).toBe(v.filter((c) => !c.delete).length - v.filter((c) => c.delete).length);
  });

  it("refuses nextVersion() before the initial load and a second initial()", () => {
    const w = new Workload(smallMixed(5), 1);
    expect(() => w.nextVersion()).toThrow(/initial/);
    for (const _ of w.initial());
    expect(() => [...w.initial()]).toThrow(/once/);
    expect(() => new Workload([BANK, BANK], 1)).toThrow(/duplicate/);
  });
});

describe("growTo", () => {
  it("grows a single store to exactly the target", () => {
    const versions = [...growTo({ ...BANK, initialSize: 1000 }, 2345, 8, { changesPerVersion: 200, growthPerVersion: 160 })];
    const live = new Set<string>();
    for (const v of versions) {
      for (const c of v) {
        if (c.delete) live.delete(id(c.key));
        else live.add(id(c.key));
      }
    }
    expect(versions[0]).toHaveLength(1000);
    // 1000 + 8 × 160 = 2280, then a last version of 65.
    expect(versions).toHaveLength(10);
    expect(versions[9]).toHaveLength(200 + 50 + 65);
    expect(live.size).toBe(2345);
  });

  it("stops at the initial load when the target is below initialSize", () => {
    const versions = [...growTo(BANK, 500, 1)];
    expect(versions).toHaveLength(1);
    expect(versions[0]).toHaveLength(500);
  });
});
