/**
 * The ids a commit's leaves rows take: ids pruning freed (each a hole an old row left in the `leaves` table) where
 * they lie densely, then new ones after every id in use (see sqlite/leaf-ids.ts). Each commit looks at the next
 * window of the free ids, read afresh, so what a prune thread or process freed meanwhile is taken too, in a later
 * pass if not this one; the ids given to versions still in flight to the writer thread are still listed as free
 * until their write lands, and are passed over.
 * @module
 */
import type { LeafReader } from "../../sqlite/leaf-reader.js";
import { packLeafIds } from "../../sqlite/leaf-ids.js";
import type { LeafIdGrant } from "./version-rows.js";

/** Free ids looked at a commit, per row it writes. */
const WINDOW = 8;
/** Ids to a run (a leaves page holds ~5 rows of the scale bench's ~700 bytes). */
const RUN = 8;

/**
 * The ids of `free` (ascending) in runs of RUN ids of which at least half are free: a row given an id lands in the
 * page that holds its neighbours, so a commit that took ids scattered one to a page would write a page per row,
 * where new ids fill a page with ~5 (the 1M-key churn ran 10–15 % slower taking the smallest free ids whatever lay
 * around them). Sparser runs wait until more of their rows are freed.
 */
function dense(free: readonly number[]): number[] {
  const out: number[] = [];
  for (let i = 0; i < free.length; ) {
    const run = Math.floor(free[i]! / RUN);
    let j = i;
    while (j < free.length && Math.floor(free[j]! / RUN) === run) j++;
    if (j - i >= RUN / 2) for (let k = i; k < j; k++) out.push(free[k]!);
    i = j;
  }
  return out;
}

/** Hands out leaves row ids to one writer's commits, in order. */
export class LeafSlots {
  /** The id the next appended row gets. */
  private next: number;
  /** Where the next look at the free ids starts (after this id). */
  private after = 0;
  /** The freed ids taken by versions not known to have landed, by version. */
  private readonly inFlight = new Map<number, number[]>();

  constructor(
    private readonly leaves: LeafReader,
    /** True once a version's write is on disk (always, for inline writes), without waiting for it. */
    private readonly landed: (version: number) => boolean,
  ) {
    this.next = leaves.nextId();
  }

  /** Ids for `n` rows of `version`: granted only; {@link taken} makes them the version's once it is written. */
  grant(version: number, n: number): LeafIdGrant {
    for (const v of [...this.inFlight.keys()]) if (this.landed(v)) this.inFlight.delete(v);
    const busy = new Set<number>();
    for (const ids of this.inFlight.values()) for (const id of ids) busy.add(id);
    let ids: number[] = [];
    if (n > 0) {
      const free = this.leaves.freeIds(this.after, WINDOW * n + busy.size);
      // The next commit looks past this one's window; past the last free id, from the first again.
      this.after = free.length < WINDOW * n + busy.size ? 0 : free[free.length - 1]!;
      ids = dense(free.filter((id) => !busy.has(id))).slice(0, n);
    }
    const reused = ids.length;
    for (let id = this.next; ids.length < n; ) ids.push(id++);
    return { ids, reused, next: this.next, version, packed: packLeafIds(ids) };
  }

  /** The write of `g` was handed on (written inline, or queued to the writer thread). */
  taken(g: LeafIdGrant): void {
    this.next += g.ids.length - g.reused;
    if (g.reused > 0 && !this.landed(g.version)) this.inFlight.set(g.version, g.ids.slice(0, g.reused));
  }
}
