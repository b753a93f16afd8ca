/**
 * The ids a commit's leaves rows take: the smallest ids pruning freed first (each a hole an old row left in the
 * `leaves` table), then new ones after every id in use (see sqlite/leaf-ids.ts). Freed ids are read afresh at each
 * commit, so what a prune thread or process freed meanwhile is taken too; the ids given to versions still in flight
 * to the writer thread are still listed as free until their write lands, and are passed over.
 * @module
 */
import type { LeafReader } from "../../sqlite/leaf-reader.js";
import { packLeafIds } from "../../sqlite/leaf-ids.js";
import type { LeafIdGrant } from "./version-rows.js";

/** Hands out leaves row ids to one writer's commits, in order. */
export class LeafSlots {
  /** The id the next appended row gets. */
  private next: number;
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
    const ids = n === 0 ? [] : this.leaves.freeIds(n + busy.size).filter((id) => !busy.has(id)).slice(0, n);
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
