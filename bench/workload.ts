// Deterministic benchmark workload, a port of the changeset generator of cosmos/iavl-bench (bench/gen.go and
// bench/store_gen.go on main; profile "mixed" of bench/cmd/gen-changesets).
//
// As iavl-bench does:
// - Version 1 holds only creates: initialSize keys per store, interleaved across stores.
// - Every later version, per store: deletes = trunc(deleteFraction × changesPerVersion), updates = the rest,
//   creates = deletes + growth, where growth is the integer part of an accumulator gaining growthPerVersion
//   ((FinalSize − InitialSize) / (Versions − 1) upstream) each version.
// - Ops are interleaved by picking a store uniformly among those with work left this version (in byte order of
//   name), then a kind uniformly among the kinds it has left (create, update, delete): the small stores run out
//   early and the tail of a version is all bank.
// - A create draws a fresh key, redrawing while it is live, and the key is live at once; updates and deletes pick
//   uniformly among live keys; a delete (here also an update) with no live key becomes a create.
// - Lengths: trunc(N(0,1) × stdDev + mean); if < 1, once more with stdDev trunc(mean / 3), then clamp to 1. With
//   stdDevs far above the mean (bank values 100 ± 1200) half the draws take the second rule, so the realised mean is
//   well above the nominal one.
//
// Where we differ, and why: xoshiro128** seeded by splitmix32 and Box–Muller normals instead of Go's PCG and
// ziggurat, so byte streams differ while distributions and counts do not; live keys are an array with swap-remove
// (uniform, O(1)) looked up by a 53-bit content hash; values longer than FRESH_VALUE_BYTES get a fresh 16-byte head
// and a body copied from a seeded 1 MiB pool at a random offset, because drawing the ~18 MB of a mixed version from
// the PRNG would cost more than the tree work measured (the older iavl-bench generator pooled values too).
//
// All byte arrays handed out are shared with the generator's live-key set: treat them as read-only.

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

/** Versions of the "mixed-small" run the published figures refer to; sets MIXED's growth. */
export const MIXED_SMALL_VERSIONS = 10_000;

/**
 * The mixed profile as `gen-changesets --profile mixed --versions V --scale S` builds it (SPEC §8): growth =
 * (trunc(FinalSize × scale) − InitialSize) / (V − 1); the initial size of 35,000 is not scaled.
 */
export function mixedProfiles(versions: number, scale = 1): StoreProfile[] {
  if (!Number.isInteger(versions) || versions < 2) throw new RangeError(`versions must be an integer >= 2, got ${versions}`);
  const rows: Array<[string, number, number, number, number, number, number, number]> = [
    // name, key mean ± sd, value mean ± sd, changes per version, delete fraction, upstream FinalSize
    ["bank", 56, 3, 100, 1200, 1840, 0.25, 2_200_200],
    ["lockup", 56, 3, 1936, 29261, 363, 0.29, 2_600_200],
    ["staking", 24, 2, 12263, 22967, 305, 0.25, 1_600_696],
  ];
  return rows.map(([name, keyMean, keyStdDev, valueMean, valueStdDev, changesPerVersion, deleteFraction, final]) => ({
    name, keyMean, keyStdDev, valueMean, valueStdDev, initialSize: 35_000, changesPerVersion, deleteFraction,
    growthPerVersion: Math.max(0, Math.trunc(final * scale) - 35_000) / (versions - 1),
  }));
}

/** bank, lockup, staking; growth as for a 10,000-version run at scale 1 (~217, ~257, ~157 keys/version). */
export const MIXED: StoreProfile[] = mixedProfiles(MIXED_SMALL_VERSIONS);
/** The bank row of MIXED alone. */
export const BANK: StoreProfile = { ...MIXED[0]! };

// ---- PRNG -----------------------------------------------------------------------------------------------------------

const TWO_POW_32 = 4294967296;

function splitmix32(state: number): [next: number, out: number] {
  const s = (state + 0x9e3779b9) | 0;
  let z = Math.imul(s ^ (s >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return [s, z ^ (z >>> 16)];
}

/** xoshiro128** with Box–Muller normals. Seeds are any safe integer; all 53 bits matter. */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;
  private spare: number | undefined;

  constructor(seed: number) {
    if (!Number.isSafeInteger(seed)) throw new RangeError(`seed must be a safe integer, got ${seed}`);
    // Low and high halves seed separate splitmix streams, so distinct seeds give distinct states.
    const [lo, a] = splitmix32(seed >>> 0);
    const [, b] = splitmix32(lo);
    const [hi, c] = splitmix32((Math.floor(seed / TWO_POW_32) >>> 0) ^ 0x6a09e667);
    const [, d] = splitmix32(hi);
    [this.a, this.b, this.c, this.d] = [a, b, c, (a | b | c | d) === 0 ? 1 : d];
  }

  /** Next 32-bit output as a signed int32 (`>>> 0` for unsigned). */
  nextInt32(): number {
    const b = this.b;
    const r = Math.imul(b, 5);
    const t = b << 9;
    this.c ^= this.a;
    this.d ^= b;
    this.b = b ^ this.c;
    this.a ^= this.d;
    this.c ^= t;
    this.d = (this.d << 11) | (this.d >>> 21);
    return Math.imul((r << 7) | (r >>> 25), 9);
  }

  /** Uniform integer in [0, n), n <= 2^32. */
  int(n: number): number {
    return Math.floor(((this.nextInt32() >>> 0) / TWO_POW_32) * n);
  }

  /** Standard normal by Box–Muller; the second value of each pair is kept for the next call. */
  normal(): number {
    if (this.spare !== undefined) {
      const s = this.spare;
      this.spare = undefined;
      return s;
    }
    const r = Math.sqrt(-2 * Math.log(((this.nextInt32() >>> 0) + 1) / TWO_POW_32));
    const theta = 2 * Math.PI * ((this.nextInt32() >>> 0) / TWO_POW_32);
    this.spare = r * Math.sin(theta);
    return r * Math.cos(theta);
  }

  /** Fills `out[start, end)`, one output per 4 bytes, little-endian; the state lives in locals, which makes it fast. */
  fill(out: Uint8Array, start = 0, end = out.length): void {
    let [a, b, c, d] = [this.a, this.b, this.c, this.d];
    for (let i = start; i < end; ) {
      let r = Math.imul(b, 5);
      r = Math.imul((r << 7) | (r >>> 25), 9);
      const t = b << 9;
      c ^= a;
      d ^= b;
      b ^= c;
      a ^= d;
      c ^= t;
      d = (d << 11) | (d >>> 21);
      for (let j = 0; j < 4 && i < end; j++, r >>>= 8) out[i++] = r;
    }
    [this.a, this.b, this.c, this.d] = [a, b, c, d];
  }
}

/** iavl-bench's length rule; see the header. */
export function drawLength(rng: Rng, mean: number, stdDev: number): number {
  const length = Math.trunc(rng.normal() * stdDev + mean);
  return length >= 1 ? length : Math.max(1, Math.trunc(rng.normal() * Math.trunc(mean / 3) + mean));
}

// ---- live keys and the generator ------------------------------------------------------------------------------------

/** Values at most this long are entirely fresh PRNG bytes; longer ones get a fresh head + pool body. */
export const FRESH_VALUE_BYTES = 64;
const POOL_BYTES = 1 << 20;

/**
 * 53-bit content hash of a key, the live set's identity for it (cheaper than a string per key). A create whose hash
 * is live redraws, as upstream redraws a live key; unequal keys collide with odds ~2^-53 per pair.
 */
function keyHash(key: Uint8Array): number {
  let h1 = 0x811c9dc5 ^ key.length;
  let h2 = 0x9e3779b9 ^ Math.imul(key.length, 0x85ebca6b);
  for (let i = 0; i < key.length; i++) {
    h1 = Math.imul(h1 ^ key[i]!, 0x01000193);
    h2 = Math.imul(h2 + key[i]!, 0x5bd1e995);
    h2 ^= h2 >>> 15;
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 0x85ebca6b);
  h1 = Math.imul(h1 ^ (h1 >>> 13) ^ h2, 0xc2b2ae35);
  h1 ^= h1 >>> 16;
  h2 = Math.imul(h2 ^ (h2 >>> 16), 0x7feb352d);
  return (h1 >>> 0) * 0x200000 + ((h2 ^ (h2 >>> 15)) >>> 11);
}

/** One store's live keys: an array for a uniform pick, an index by key hash for lookup and swap-remove. */
interface Store {
  readonly profile: StoreProfile;
  readonly keys: Uint8Array[];
  readonly hashes: number[];
  readonly index: Map<number, number>;
  /** Fractional growth carried to the next version (upstream createAccumulator). */
  growthAcc: number;
}

/** Ops of one store left to draw in the version being generated. */
type Todo = { store: Store } & Omit<VersionPlan, "store">;

export class Workload {
  private readonly rng: Rng;
  private readonly stores: Store[];
  private readonly pool = new Uint8Array(POOL_BYTES);
  private versionNo = 0;
  private initialState: "pending" | "running" | "done" = "pending";
  private plan: VersionPlan[] = [];

  constructor(profiles: StoreProfile[], seed: number) {
    if (profiles.length === 0) throw new RangeError("at least one store profile is required");
    for (const p of profiles) {
      const counts = [p.initialSize, p.changesPerVersion, p.growthPerVersion ?? 0, p.keyMean, p.valueMean];
      const integers = Number.isInteger(p.initialSize) && Number.isInteger(p.changesPerVersion);
      if (counts.some((x) => !(x >= 0)) || !integers || !(p.deleteFraction >= 0 && p.deleteFraction <= 1)) {
        throw new RangeError(`profile ${p.name}: counts must be non-negative integers, deleteFraction in [0, 1]`);
      }
    }
    if (new Set(profiles.map((p) => p.name)).size !== profiles.length) throw new RangeError("duplicate store name");
    this.rng = new Rng(seed);
    // Byte order of the name, like the Go B-tree keyed by store key.
    const byName = (x: Store, y: Store): number => (x.profile.name < y.profile.name ? -1 : x.profile.name > y.profile.name ? 1 : 0);
    this.stores = profiles.map((p) => ({ profile: { ...p }, keys: [], hashes: [], index: new Map(), growthAcc: 0 })).sort(byName);
    this.rng.fill(this.pool);
  }

  /** Continues a stored chain: adopts its stores' live keys instead of the initial load, and goes on from `version`. */
  resume(version: number, live: ReadonlyMap<string, Iterable<Uint8Array>>): void {
    if (this.initialState !== "pending") throw new Error("resume() must come before any version is generated");
    for (const [name, keys] of live) for (const k of keys) this.add(this.store(name), k, keyHash(k));
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
    return this.store(store).keys.length;
  }

  isLive(store: string, key: Uint8Array): boolean {
    const s = this.store(store);
    const i = s.index.get(keyHash(key));
    return i !== undefined && Buffer.compare(s.keys[i]!, key) === 0;
  }

  /** Snapshot of one store's live keys (arbitrary order). */
  liveKeys(store: string): Uint8Array[] {
    return [...this.store(store).keys];
  }

  /** Version 1: initialSize creates per store, interleaved; lazy (the full mixed load is ~1.2 GB), run once, to the end. */
  *initial(): Generator<Change, void, undefined> {
    if (this.initialState !== "pending") throw new Error("initial() may be called only once");
    this.initialState = "running";
    this.versionNo = 1;
    this.plan = this.stores.map((s) => ({ store: s.profile.name, creates: s.profile.initialSize, updates: 0, deletes: 0 }));
    const todos = this.stores.filter((s) => s.profile.initialSize > 0).map((store) => ({ store, left: store.profile.initialSize }));
    while (todos.length > 0) {
      const i = this.rng.int(todos.length);
      yield this.create(todos[i]!.store);
      if (--todos[i]!.left === 0) todos.splice(i, 1);
    }
    this.initialState = "done";
  }

  /**
   * The next version's changes, all stores. `growthOverride`, if given, replaces every store's growth for this
   * version and leaves the accumulators alone (growTo uses it to land exactly on its target).
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
    const todos: Todo[] = this.stores.map((store) => {
      const p = store.profile;
      const deletes = Math.trunc(p.deleteFraction * p.changesPerVersion);
      let growth = growthOverride;
      if (growth === undefined) {
        store.growthAcc += p.growthPerVersion ?? 0;
        growth = Math.trunc(store.growthAcc);
        store.growthAcc -= growth;
      }
      return { store, creates: deletes + growth, updates: p.changesPerVersion - deletes, deletes };
    });
    this.plan = todos.map(({ store, ...counts }) => ({ store: store.profile.name, ...counts }));
    const left = todos.filter((t) => t.creates + t.updates + t.deletes > 0);
    const out: Change[] = [];
    while (left.length > 0) {
      const ti = this.rng.int(left.length);
      const t = left[ti]!;
      // The k-th kind with ops left, in the order create, update, delete.
      let k = this.rng.int((t.creates > 0 ? 1 : 0) + (t.updates > 0 ? 1 : 0) + (t.deletes > 0 ? 1 : 0));
      if (t.creates > 0 && k-- === 0) t.creates--, out.push(this.create(t.store));
      else if (t.updates > 0 && k-- === 0) t.updates--, out.push(this.update(t.store));
      else t.deletes--, out.push(this.remove(t.store));
      if (t.creates + t.updates + t.deletes === 0) left.splice(ti, 1);
    }
    return out;
  }

  private store(name: string): Store {
    const s = this.stores.find((x) => x.profile.name === name);
    if (s === undefined) throw new RangeError(`unknown store ${name}`);
    return s;
  }

  private add(s: Store, key: Uint8Array, h: number): void {
    s.index.set(h, s.keys.length);
    s.keys.push(key);
    s.hashes.push(h);
  }

  private create(s: Store): Change {
    const p = s.profile;
    for (let attempt = 0; attempt < 1000; attempt++) {
      const key = new Uint8Array(drawLength(this.rng, p.keyMean, p.keyStdDev));
      this.rng.fill(key);
      const h = keyHash(key);
      if (s.index.has(h)) continue;
      this.add(s, key, h);
      return { store: p.name, key, value: this.value(p), delete: false };
    }
    throw new Error(`store ${p.name}: no fresh key after 1000 draws; key space exhausted?`);
  }

  private update(s: Store): Change {
    if (s.keys.length === 0) return this.create(s);
    return { store: s.profile.name, key: s.keys[this.rng.int(s.keys.length)]!, value: this.value(s.profile), delete: false };
  }

  private remove(s: Store): Change {
    if (s.keys.length === 0) return this.create(s);
    const i = this.rng.int(s.keys.length);
    const key = s.keys[i]!;
    s.index.delete(s.hashes[i]!);
    // Swap-remove: the last key takes the slot.
    const [lastKey, lastHash] = [s.keys.pop()!, s.hashes.pop()!];
    if (i < s.keys.length) {
      s.keys[i] = lastKey;
      s.hashes[i] = lastHash;
      s.index.set(lastHash, i);
    }
    return { store: s.profile.name, key, delete: true };
  }

  private value(p: StoreProfile): Uint8Array {
    const n = drawLength(this.rng, p.valueMean, p.valueStdDev);
    const v = new Uint8Array(n);
    if (n <= FRESH_VALUE_BYTES) {
      this.rng.fill(v);
      return v;
    }
    // A fresh head keeps long values distinct; the body is pool bytes from a random offset.
    this.rng.fill(v, 0, 16);
    for (let at = 16; at < n; ) {
      const len = Math.min(n - at, POOL_BYTES);
      const off = this.rng.int(POOL_BYTES - len + 1);
      v.set(this.pool.subarray(off, off + len), at);
      at += len;
    }
    return v;
  }
}

// ---- growing a single store to a target size ------------------------------------------------------------------------

export interface GrowOptions {
  /** Updates + deletes per version; default: the profile's. */
  changesPerVersion?: number;
  /** Net new keys per version; default: the profile's growthPerVersion, else 160. */
  growthPerVersion?: number;
}

/** Growth when neither options nor profile give one (profiles built by hand). */
export const DEFAULT_GROWTH_PER_VERSION = 160;

/**
 * Versions that grow one store to exactly `targetKeys` live keys: first the initial load (min(initialSize, target)
 * creates, one version), then normal versions whose last one's growth is cut to land on the target (with
 * initialSize 0, early deletes become creates and the last version may overshoot).
 */
export function* growTo(profile: StoreProfile, targetKeys: number, seed: number, options: GrowOptions = {}): Generator<Change[]> {
  if (!Number.isInteger(targetKeys) || targetKeys < 0) throw new RangeError(`targetKeys must be an integer >= 0, got ${targetKeys}`);
  const growth = options.growthPerVersion ?? profile.growthPerVersion ?? DEFAULT_GROWTH_PER_VERSION;
  const changesPerVersion = options.changesPerVersion ?? profile.changesPerVersion;
  const p = { ...profile, initialSize: Math.min(profile.initialSize, targetKeys), changesPerVersion, growthPerVersion: growth };
  if (!(growth > 0) && targetKeys > p.initialSize) throw new RangeError("growthPerVersion must be > 0 to grow past initialSize");
  const w = new Workload([p], seed);
  yield [...w.initial()];
  for (let live = w.liveCount(p.name); live < targetKeys; live = w.liveCount(p.name)) {
    // Cut the last version short; Math.ceil bounds what the accumulator can add this version.
    yield targetKeys - live <= Math.ceil(growth) ? w.nextVersion(targetKeys - live) : w.nextVersion();
  }
}
