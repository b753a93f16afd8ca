/**
 * The scale section's data, made from numbers alone so that the bench and the store's child process each build the
 * same version from its number (nothing but the number crosses the pipe) and nothing holds the live keys:
 *
 * - Key i: the first 56 bytes of sha512("iavlite-scale " + i), as the bank profile's 56-byte keys.
 * - The value key i gets in version v: 100–1,200 bytes (uniform) copied from a seeded 1 MiB pool at an offset drawn
 *   from (i, v), so that every set is a fresh value and a reader can tell which version's value it read.
 * - Growth: version v sets keys (v − 1)·n … v·n − 1, so key i is set in version ⌊i / n⌋ + 1.
 * - {@link Churn}: versions of 2,000 changes over a fixed number of live keys, held as indices in an Int32Array.
 * @module
 */
import { hash } from "node:crypto";
import { Rng, type Change } from "./workload.js";

const POOL = new Uint8Array(1 << 20);
new Rng(0x5ca1e).fill(POOL);

/** Key i. */
export const keyOf = (i: number): Uint8Array => hash("sha512", `iavlite-scale ${i}`, "buffer").subarray(0, 56);

/** The value key i gets in version v (a copy, as an application's value is its own allocation). */
export function valueOf(i: number, v: number): Uint8Array {
  const rng = new Rng(i * 2 ** 21 + v);
  const n = 100 + rng.int(1_101);
  const at = rng.int(POOL.length - n + 1);
  return POOL.slice(at, at + n);
}

/** The version key i is set in while growing `perVersion` keys a version. */
export const setIn = (i: number, perVersion: number): number => Math.floor(i / perVersion) + 1;

/** Version v of growing by `perVersion` new keys a version. */
export function grown(v: number, perVersion: number): Change[] {
  return Array.from({ length: perVersion }, (_, j) => {
    const i = (v - 1) * perVersion + j;
    return { store: "bank", key: keyOf(i), value: valueOf(i, v), delete: false };
  });
}

/** Updates and removes of a churn version (creates replace the removes, so the key count stays the same). */
export const CHURN = { updates: 1_500, removes: 500 };

/**
 * Versions of {@link CHURN}: updates of live keys, removes of live keys and as many creates of new indices, each
 * version drawn from its number and the live indices, which every side holding a Churn of the same start keeps alike.
 */
export class Churn {
  private readonly live: Int32Array;
  private next: number;

  /** Keys 0 … size − 1 live, as growth leaves them. */
  constructor(size: number) {
    this.live = Int32Array.from({ length: size }, (_, i) => i);
    this.next = size;
  }

  /** The changes of version v. */
  version(v: number): Change[] {
    const rng = new Rng(-v); // negative: no valueOf seed
    const set = (i: number): Change => ({ store: "bank", key: keyOf(i), value: valueOf(i, v), delete: false });
    const out = Array.from({ length: CHURN.updates }, () => set(this.live[rng.int(this.live.length)]!));
    let n = this.live.length;
    for (let r = 0; r < CHURN.removes; r++) {
      const at = rng.int(n);
      out.push({ store: "bank", key: keyOf(this.live[at]!), delete: true });
      this.live[at] = this.live[--n]!;
    }
    while (n < this.live.length) out.push(set((this.live[n++] = this.next++)));
    return out;
  }
}

/**
 * The sizes growth reports at: 100k, 1M, 4M and 10M keys, or, with SCALE_KEYS=n in the environment (a shorter run
 * than the full one's hours), those below n and n itself.
 */
export function scaleSizes(): number[] {
  const full = [100_000, 1_000_000, 4_000_000, 10_000_000];
  const n = Number(process.env["SCALE_KEYS"] ?? full[full.length - 1]);
  if (!Number.isInteger(n) || n < 100_000 || n % 10_000 !== 0) throw new Error("bench: SCALE_KEYS must be a multiple of 10,000, at least 100,000");
  return [...full.filter((k) => k < n), n];
}
