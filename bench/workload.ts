// Deterministic benchmark workload, a port of the changeset generator of cosmos/iavl-bench
// (bench/gen.go and bench/store_gen.go on main; profile "mixed" of bench/cmd/gen-changesets).
//
// What iavl-bench does, and we do too:
// - Version 1 holds only creates: InitialSize keys per store, interleaved across stores.
// - Every later version, per store: deletes = trunc(DeleteFraction × ChangePerVersion),
//   updates = ChangePerVersion − deletes, creates = deletes + growth, where growth is the
//   integer part of an accumulator that gains (FinalSize − InitialSize) / (Versions − 1) per
//   version, so the tree grows linearly even when that rate is fractional.
// - Ops are interleaved by repeatedly picking a store uniformly among stores that still have
//   work this version (stores in byte order of name), then an op kind uniformly among the
//   kinds that store still has (create, update, delete). This is not a uniform shuffle: the
//   small stores run out early and the tail of a version is all bank.
// - A create draws a fresh key, redrawing while it is live; the key is live immediately, so a
//   later update or delete in the same version may hit it. Updates and deletes pick uniformly
//   among live keys. A delete with no live keys becomes a create.
// - Lengths: trunc(N(0,1) × stdDev + mean); if < 1, once more with stdDev trunc(mean / 3)
//   (not the profile's stdDev, so short draws pile up near the mean), then clamp to 1. With
//   stdDevs far above the mean (bank values 100 ± 1200) about half the lengths come from the
//   second draw, so the realised mean is well above the nominal one.
//
// Where the port differs, and why:
// - PRNG: xoshiro128** seeded by splitmix32 instead of Go's PCG(0, 0), and Box–Muller
//   instead of Go's ziggurat NormFloat64. Byte streams and key choices therefore differ
//   from Go's files; the distributions and per-version counts are the same.
// - Live-key pick: an array with swap-remove instead of Go's sorted B-tree GetAt(i). Both
//   are uniform; ours is O(1). Liveness is looked up by a 53-bit content hash (see keyHash).
// - Bytes: Go draws each byte with IntN(256). We fill whole 32-bit words, and for values
//   longer than FRESH_VALUE_BYTES copy all but a fresh head from a seeded 1 MiB pool at a
//   random offset. A mixed version carries ~18 MB of values; drawing all of it from the
//   PRNG would cost more than the tree work we are measuring. The older iavl-bench generator
//   (tag bench/v0.0.4, bench/gen.go) did the same with 512-byte chunks from a 256 MB pool.
//   Tree code never looks inside values beyond hashing and storing them.
// - An update with no live keys becomes a create; Go returns an error there.
// - FinalSize/Versions become growthPerVersion; mixedProfiles() derives it the same way.
//
// All byte arrays handed out are shared with the generator's live-key set: treat as read-only.

/** One key-value change; `value` is present exactly when `delete` is false. */
export interface Change {
  store: string;
  key: Uint8Array;
  value?: Uint8Array;
  delete: boolean;
}

export interface StoreProfile {
  name: string;
  keyMean: number;
  keyStdDev: number;
  valueMean: number;
  valueStdDev: number;
  /** Keys created by the initial load (version 1). */
  initialSize: number;
  /** Updates + deletes per later version (creates come on top: deletes + growth). */
  changesPerVersion: number;
  deleteFraction: number;
  /** Net new keys per later version; may be fractional (accumulated). Default 0. */
  growthPerVersion?: number;
}

/** Per-store op counts of one version. */
export interface VersionPlan {
  store: string;
  creates: number;
  updates: number;
  deletes: number;
}

// Upstream FinalSize at scale 1; growth per version is derived from it.
const BANK_FINAL = 2_200_200;
const LOCKUP_FINAL = 2_600_200;
const STAKING_FINAL = 1_600_696;
const UPSTREAM_INITIAL = 35_000;

/** Versions of the "mixed-small" run the published figures refer to; sets MIXED's growth. */
export const MIXED_SMALL_VERSIONS = 10_000;

/**
 * The mixed profile as `gen-changesets --profile mixed --versions V --scale S` builds it:
 * growth = (trunc(FinalSize × scale) − InitialSize) / (V − 1). InitialSize is not scaled.
 */
export function mixedProfiles(versions: number, scale = 1): StoreProfile[] {
  if (!Number.isInteger(versions) || versions < 2) {
    throw new RangeError(`versions must be an integer >= 2, got ${versions}`);
  }
  const growth = (finalSize: number): number =>
    Math.max(0, Math.trunc(finalSize * scale) - UPSTREAM_INITIAL) / (versions - 1);
  return [
    {
      name: "bank",
      keyMean: 56,
      keyStdDev: 3,
      valueMean: 100,
      valueStdDev: 1200,
      initialSize: UPSTREAM_INITIAL,
      changesPerVersion: 1840,
      deleteFraction: 0.25,
      growthPerVersion: growth(BANK_FINAL),
    },
    {
      name: "lockup",
      keyMean: 56,
      keyStdDev: 3,
      valueMean: 1936,
      valueStdDev: 29261,
      initialSize: UPSTREAM_INITIAL,
      changesPerVersion: 363,
      deleteFraction: 0.29,
      growthPerVersion: growth(LOCKUP_FINAL),
    },
    {
      name: "staking",
      keyMean: 24,
      keyStdDev: 2,
      valueMean: 12263,
      valueStdDev: 22967,
      initialSize: UPSTREAM_INITIAL,
      changesPerVersion: 305,
      deleteFraction: 0.25,
      growthPerVersion: growth(STAKING_FINAL),
    },
  ];
}

/** bank, lockup, staking; growth as for a 10,000-version run at scale 1 (~217, ~257, ~157 keys/version). */
export const MIXED: StoreProfile[] = mixedProfiles(MIXED_SMALL_VERSIONS);

function row(profiles: StoreProfile[], name: string): StoreProfile {
  const p = profiles.find((x) => x.name === name);
  if (p === undefined) throw new Error(`no ${name} row`);
  return { ...p };
}

/** The bank row of MIXED alone. */
export const BANK: StoreProfile = row(MIXED, "bank");

// ---------------------------------------------------------------------------------------
// PRNG

const TWO_POW_32 = 4294967296;

function splitmix32(state: number): [next: number, out: number] {
  const s = (state + 0x9e3779b9) | 0;
  let z = s;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  z ^= z >>> 16;
  return [s, z];
}

/** xoshiro128** with Box–Muller normals. Seeds are any safe integer; all 53 bits matter. */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;
  private spare = 0;
  private hasSpare = false;

  constructor(seed: number) {
    if (!Number.isSafeInteger(seed)) throw new RangeError(`seed must be a safe integer, got ${seed}`);
    // Low and high halves seed separate splitmix streams, so distinct seeds give distinct states.
    let lo = seed >>> 0;
    let hi = Math.floor(seed / TWO_POW_32) >>> 0;
    let out: number;
    [lo, out] = splitmix32(lo);
    this.a = out;
    [lo, out] = splitmix32(lo);
    this.b = out;
    [hi, out] = splitmix32(hi ^ 0x6a09e667);
    this.c = out;
    [hi, out] = splitmix32(hi);
    this.d = out;
    if ((this.a | this.b | this.c | this.d) === 0) this.d = 1;
  }

  /** Next 32-bit output as a signed int32 (callers use `>>> 0` for unsigned). */
  nextInt32(): number {
    const b = this.b;
    let r = Math.imul(b, 5);
    r = Math.imul((r << 7) | (r >>> 25), 9);
    const t = b << 9;
    this.c ^= this.a;
    this.d ^= b;
    this.b = b ^ this.c;
    this.a ^= this.d;
    this.c ^= t;
    this.d = (this.d << 11) | (this.d >>> 21);
    return r;
  }

  /** Uniform in [0, 1). */
  uniform(): number {
    return (this.nextInt32() >>> 0) / TWO_POW_32;
  }

  /** Uniform integer in [0, n), n <= 2^32 (multiply-shift; bias below n / 2^32). */
  int(n: number): number {
    return Math.floor(((this.nextInt32() >>> 0) / TWO_POW_32) * n);
  }

  /** Standard normal by Box–Muller; the second value of each pair is kept for the next call. */
  normal(): number {
    if (this.hasSpare) {
      this.hasSpare = false;
      return this.spare;
    }
    const u1 = ((this.nextInt32() >>> 0) + 1) / TWO_POW_32; // (0, 1], log is finite
    const u2 = (this.nextInt32() >>> 0) / TWO_POW_32;
    const r = Math.sqrt(-2 * Math.log(u1));
    const theta = 2 * Math.PI * u2;
    this.spare = r * Math.sin(theta);
    this.hasSpare = true;
    return r * Math.cos(theta);
  }

  /**
   * Fills `out[start, end)` with random bytes, one 32-bit output per 4 bytes, little-endian
   * regardless of platform. The state lives in locals for the loop: that is what makes it fast.
   */
  fill(out: Uint8Array, start = 0, end = out.length): void {
    let a = this.a;
    let b = this.b;
    let c = this.c;
    let d = this.d;
    let i = start;
    const whole = start + ((end - start) & ~3);
    while (i < end) {
      let r = Math.imul(b, 5);
      r = Math.imul((r << 7) | (r >>> 25), 9);
      const t = b << 9;
      c ^= a;
      d ^= b;
      b ^= c;
      a ^= d;
      c ^= t;
      d = (d << 11) | (d >>> 21);
      if (i < whole) {
        out[i] = r;
        out[i + 1] = r >>> 8;
        out[i + 2] = r >>> 16;
        out[i + 3] = r >>> 24;
        i += 4;
      } else {
        for (; i < end; i++) {
          out[i] = r;
          r >>>= 8;
        }
      }
    }
    this.a = a;
    this.b = b;
    this.c = c;
    this.d = d;
  }
}

/** iavl-bench's length rule; see the header. */
export function drawLength(rng: Rng, mean: number, stdDev: number): number {
  let length = Math.trunc(rng.normal() * stdDev + mean);
  if (length < 1) {
    length = Math.trunc(rng.normal() * Math.trunc(mean / 3) + mean);
    if (length < 1) length = 1;
  }
  return length;
}

// ---------------------------------------------------------------------------------------
// Live keys and the generator

/** Values at most this long are entirely fresh PRNG bytes; longer ones get a fresh head + pool body. */
export const FRESH_VALUE_BYTES = 64;
const POOL_BYTES = 1 << 20;
const MAX_KEY_REDRAWS = 1000;

/**
 * 53-bit content hash of a key, the live set's identity for it. Cheaper than building a
 * string per key (the obvious Map key), which dominated generation time. Live keys never
 * share a hash: a create whose hash is taken redraws, exactly as upstream redraws a key
 * that is already live. Unequal keys collide with odds ~2^-53 per pair, so that redraw
 * changes nothing measurable.
 */
function keyHash(key: Uint8Array): number {
  let h1 = 0x811c9dc5 ^ key.length;
  let h2 = 0x9e3779b9 ^ Math.imul(key.length, 0x85ebca6b);
  for (let i = 0; i < key.length; i++) {
    const b = key[i] ?? 0;
    h1 = Math.imul(h1 ^ b, 0x01000193);
    h2 = Math.imul(h2 + b, 0x5bd1e995);
    h2 ^= h2 >>> 15;
  }
  h1 ^= h1 >>> 16;
  h1 = Math.imul(h1, 0x85ebca6b);
  h1 ^= h1 >>> 13;
  h1 = Math.imul(h1 ^ h2, 0xc2b2ae35);
  h1 ^= h1 >>> 16;
  h2 = Math.imul(h2 ^ (h2 >>> 16), 0x7feb352d);
  h2 ^= h2 >>> 15;
  return (h1 >>> 0) * 0x200000 + (h2 >>> 11);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Live keys of one store: array for O(1) uniform pick, hash map for O(1) lookup and swap-remove. */
class LiveKeys {
  private readonly keys: Uint8Array[] = [];
  private readonly hashes: number[] = [];
  private readonly index = new Map<number, number>();

  get size(): number {
    return this.keys.length;
  }

  /** True when a live key has hash `h` (the key itself may differ, see keyHash). */
  hasHash(h: number): boolean {
    return this.index.has(h);
  }

  /** Exact membership test. */
  has(key: Uint8Array): boolean {
    const i = this.index.get(keyHash(key));
    return i !== undefined && sameBytes(this.at(i), key);
  }

  add(key: Uint8Array, h: number): void {
    this.index.set(h, this.keys.length);
    this.keys.push(key);
    this.hashes.push(h);
  }

  at(i: number): Uint8Array {
    const key = this.keys[i];
    if (key === undefined) throw new Error(`live key index ${i} out of range`);
    return key;
  }

  /** Removes the i-th key by moving the last one into its slot; returns the removed key. */
  removeAt(i: number): Uint8Array {
    const key = this.at(i);
    const h = this.hashes[i];
    const last = this.keys.length - 1;
    const lastKey = this.keys[last];
    const lastHash = this.hashes[last];
    if (h === undefined || lastKey === undefined || lastHash === undefined) throw new Error("live key set corrupt");
    if (i !== last) {
      this.keys[i] = lastKey;
      this.hashes[i] = lastHash;
      this.index.set(lastHash, i);
    }
    this.keys.pop();
    this.hashes.pop();
    this.index.delete(h);
    return key;
  }

  *[Symbol.iterator](): Generator<Uint8Array> {
    yield* this.keys;
  }
}

interface StoreState {
  readonly profile: StoreProfile;
  readonly live: LiveKeys;
  /** Fractional growth carried to the next version (upstream createAccumulator). */
  growthAcc: number;
}

/** Remaining ops of one store within the version being generated. */
interface Todo {
  readonly state: StoreState;
  creates: number;
  updates: number;
  deletes: number;
}

function validate(p: StoreProfile): void {
  const nonNeg = (field: string, v: number, integer: boolean): void => {
    if (!Number.isFinite(v) || v < 0 || (integer && !Number.isInteger(v))) {
      throw new RangeError(`profile ${p.name}: ${field} must be a non-negative ${integer ? "integer" : "number"}, got ${v}`);
    }
  };
  nonNeg("keyMean", p.keyMean, false);
  nonNeg("keyStdDev", p.keyStdDev, false);
  nonNeg("valueMean", p.valueMean, false);
  nonNeg("valueStdDev", p.valueStdDev, false);
  nonNeg("initialSize", p.initialSize, true);
  nonNeg("changesPerVersion", p.changesPerVersion, true);
  nonNeg("growthPerVersion", p.growthPerVersion ?? 0, false);
  if (!(p.deleteFraction >= 0 && p.deleteFraction <= 1)) {
    throw new RangeError(`profile ${p.name}: deleteFraction must be in [0, 1], got ${p.deleteFraction}`);
  }
}

function compareNames(x: StoreState, y: StoreState): number {
  // Byte order of the name, like the Go B-tree keyed by store key (names are ASCII in practice).
  const a = x.profile.name;
  const b = y.profile.name;
  return a < b ? -1 : a > b ? 1 : 0;
}

export class Workload {
  private readonly rng: Rng;
  private readonly stores: StoreState[];
  private readonly byName = new Map<string, StoreState>();
  private readonly pool: Uint8Array;
  private versionNo = 0;
  private initialState: "pending" | "running" | "done" = "pending";
  private plan: VersionPlan[] = [];

  constructor(profiles: StoreProfile[], seed: number) {
    if (profiles.length === 0) throw new RangeError("at least one store profile is required");
    this.rng = new Rng(seed);
    this.stores = profiles.map((p) => {
      validate(p);
      return { profile: { ...p }, live: new LiveKeys(), growthAcc: 0 };
    });
    this.stores.sort(compareNames);
    for (const s of this.stores) {
      if (this.byName.has(s.profile.name)) throw new RangeError(`duplicate store name ${s.profile.name}`);
      this.byName.set(s.profile.name, s);
    }
    this.pool = new Uint8Array(POOL_BYTES);
    this.rng.fill(this.pool);
  }

  /**
   * Continues a chain that is already stored: adopts each store's live keys (from the stored latest version) in
   * place of the initial load, so that nextVersion() goes on from `version`.
   */
  resume(version: number, live: ReadonlyMap<string, Iterable<Uint8Array>>): void {
    if (this.initialState !== "pending") throw new Error("resume() must come before any version is generated");
    for (const [name, keys] of live) {
      const s = this.store(name);
      for (const k of keys) s.live.add(k, keyHash(k));
    }
    this.versionNo = version;
    this.initialState = "done";
  }

  /** Versions generated so far: 1 once initial() has started, +1 per nextVersion(). */
  get version(): number {
    return this.versionNo;
  }

  /** Store names in the order ops are drawn (byte order). */
  get storeNames(): string[] {
    return this.stores.map((s) => s.profile.name);
  }

  /** Op counts of the most recently generated version (the initial load included). */
  get lastPlan(): readonly VersionPlan[] {
    return this.plan;
  }

  liveCount(store: string): number {
    return this.store(store).live.size;
  }

  isLive(store: string, key: Uint8Array): boolean {
    return this.store(store).live.has(key);
  }

  /** Snapshot of one store's live keys (arbitrary order). */
  liveKeys(store: string): Uint8Array[] {
    return [...this.store(store).live];
  }

  /**
   * Version 1: initialSize creates per store, interleaved across stores as upstream does.
   * Lazy, because the full mixed load is ~1.2 GB of values. Must run to completion, once,
   * before nextVersion().
   */
  *initial(): Generator<Change, void, undefined> {
    if (this.initialState !== "pending") throw new Error("initial() may be called only once");
    this.initialState = "running";
    this.versionNo = 1;
    const todos: Todo[] = this.stores
      .filter((s) => s.profile.initialSize > 0)
      .map((s) => ({ state: s, creates: s.profile.initialSize, updates: 0, deletes: 0 }));
    this.plan = this.stores.map((s) => ({ store: s.profile.name, creates: s.profile.initialSize, updates: 0, deletes: 0 }));
    while (todos.length > 0) {
      const i = this.rng.int(todos.length);
      const todo = todos[i];
      if (todo === undefined) throw new Error("unreachable");
      yield this.create(todo.state);
      if (--todo.creates === 0) todos.splice(i, 1);
    }
    this.initialState = "done";
  }

  /**
   * The next version's changes, all stores. `growthOverride`, if given, replaces every
   * store's growth for this version and leaves the accumulators alone (growTo uses it to
   * land exactly on its target).
   */
  nextVersion(growthOverride?: number): Change[] {
    if (this.initialState !== "done" && this.stores.some((s) => s.profile.initialSize > 0)) {
      throw new Error("run initial() to completion before nextVersion()");
    }
    if (growthOverride !== undefined && !(Number.isInteger(growthOverride) && growthOverride >= 0)) {
      throw new RangeError(`growthOverride must be a non-negative integer, got ${growthOverride}`);
    }
    this.initialState = "done";
    this.versionNo++;

    const todos: Todo[] = [];
    const plan: VersionPlan[] = [];
    for (const s of this.stores) {
      const p = s.profile;
      const deletes = Math.trunc(p.deleteFraction * p.changesPerVersion);
      const updates = p.changesPerVersion - deletes;
      let growth: number;
      if (growthOverride === undefined) {
        s.growthAcc += p.growthPerVersion ?? 0;
        growth = Math.trunc(s.growthAcc);
        s.growthAcc -= growth;
      } else {
        growth = growthOverride;
      }
      const creates = deletes + growth;
      plan.push({ store: p.name, creates, updates, deletes });
      if (creates + updates + deletes > 0) todos.push({ state: s, creates, updates, deletes });
    }
    this.plan = plan;

    const out: Change[] = [];
    while (todos.length > 0) {
      const ti = this.rng.int(todos.length);
      const todo = todos[ti];
      if (todo === undefined) throw new Error("unreachable");
      const kinds = (todo.creates > 0 ? 1 : 0) + (todo.updates > 0 ? 1 : 0) + (todo.deletes > 0 ? 1 : 0);
      let k = this.rng.int(kinds);
      // k-th non-empty kind in the order create, update, delete.
      if (todo.creates > 0 && k-- === 0) {
        todo.creates--;
        out.push(this.create(todo.state));
      } else if (todo.updates > 0 && k-- === 0) {
        todo.updates--;
        out.push(this.update(todo.state));
      } else {
        todo.deletes--;
        out.push(this.remove(todo.state));
      }
      if (todo.creates + todo.updates + todo.deletes === 0) todos.splice(ti, 1);
    }
    return out;
  }

  private store(name: string): StoreState {
    const s = this.byName.get(name);
    if (s === undefined) throw new RangeError(`unknown store ${name}`);
    return s;
  }

  private create(s: StoreState): Change {
    const p = s.profile;
    for (let attempt = 0; attempt < MAX_KEY_REDRAWS; attempt++) {
      const key = new Uint8Array(drawLength(this.rng, p.keyMean, p.keyStdDev));
      this.rng.fill(key);
      const h = keyHash(key);
      if (s.live.hasHash(h)) continue;
      s.live.add(key, h);
      return { store: p.name, key, value: this.value(p), delete: false };
    }
    throw new Error(`store ${p.name}: no fresh key after ${MAX_KEY_REDRAWS} draws; key space exhausted?`);
  }

  private update(s: StoreState): Change {
    if (s.live.size === 0) return this.create(s);
    const key = s.live.at(this.rng.int(s.live.size));
    return { store: s.profile.name, key, value: this.value(s.profile), delete: false };
  }

  private remove(s: StoreState): Change {
    if (s.live.size === 0) return this.create(s);
    const key = s.live.removeAt(this.rng.int(s.live.size));
    return { store: s.profile.name, key, delete: true };
  }

  private value(p: StoreProfile): Uint8Array {
    const n = drawLength(this.rng, p.valueMean, p.valueStdDev);
    const v = new Uint8Array(n);
    if (n <= FRESH_VALUE_BYTES) {
      this.rng.fill(v);
      return v;
    }
    // Fresh head keeps long values distinct; the body is pool bytes from a random offset.
    const head = 16;
    this.rng.fill(v, 0, head);
    let at = head;
    while (at < n) {
      const len = Math.min(n - at, POOL_BYTES);
      const off = this.rng.int(POOL_BYTES - len + 1);
      v.set(this.pool.subarray(off, off + len), at);
      at += len;
    }
    return v;
  }
}

// ---------------------------------------------------------------------------------------
// Growing a single store to a target size

export interface GrowOptions {
  /** Updates + deletes per version; default: the profile's. */
  changesPerVersion?: number;
  /** Net new keys per version; default: the profile's growthPerVersion, else 160. */
  growthPerVersion?: number;
}

/** Growth when neither options nor profile give one (profiles built by hand). */
export const DEFAULT_GROWTH_PER_VERSION = 160;

/**
 * Versions that grow one store from empty to exactly `targetKeys` live keys, for the
 * "grow bank to 1,000,000 keys" bench. The first array yielded is the initial load
 * (min(initialSize, target) creates, one version); each later one is a normal mixed
 * version (updates, deletes, deletes + growth creates). The last version's growth is cut
 * so the live count lands exactly on the target (unless initialSize is 0: then early
 * deletes on an empty store turn into creates and the last version may overshoot).
 * BANK to 1M: ~4,460 versions of ~2,520 changes (1380 updates, 460 deletes, ~677 creates),
 * ~11M changes in all.
 */
export function* growTo(
  profile: StoreProfile,
  targetKeys: number,
  seed: number,
  options: GrowOptions = {},
): Generator<Change[], void, undefined> {
  if (!Number.isInteger(targetKeys) || targetKeys < 0) {
    throw new RangeError(`targetKeys must be a non-negative integer, got ${targetKeys}`);
  }
  const growth = options.growthPerVersion ?? profile.growthPerVersion ?? DEFAULT_GROWTH_PER_VERSION;
  const p: StoreProfile = {
    ...profile,
    initialSize: Math.min(profile.initialSize, targetKeys),
    changesPerVersion: options.changesPerVersion ?? profile.changesPerVersion,
    growthPerVersion: growth,
  };
  if (!(growth > 0) && targetKeys > p.initialSize) {
    throw new RangeError("growthPerVersion must be > 0 to grow past initialSize");
  }
  const w = new Workload([p], seed);
  yield [...w.initial()];
  let live = w.liveCount(p.name);
  while (live < targetKeys) {
    const remaining = targetKeys - live;
    // Cut the last version short; Math.ceil bounds what the accumulator can add this version.
    const batch = remaining <= Math.ceil(growth) ? w.nextVersion(remaining) : w.nextVersion();
    live = w.liveCount(p.name);
    yield batch;
  }
}
