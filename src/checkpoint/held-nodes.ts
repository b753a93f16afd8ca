/**
 * The nodes a checkpoint's walk holds (checkpoint-steps.ts): replaced nodes of the walked tree it may still read,
 * each with the version that replaced it, and the in-memory children they name. Marks in typed arrays by node id,
 * not a Map and a Set: a churn at a million keys holds up to ~300,000 nodes, and retiring a commit's replaced nodes
 * looked each one up in a Set once per level of the paths they came from.
 * @module
 */

const NAMED = 1; // a held node names it as a child
const FREEING = 2; // in the list being retired now

/** Held nodes and the children they name, for one walk at a time. */
export class HeldNodes {
  /** By node: the version that replaced it, less {@link base}, plus one; 0 when not held. */
  private by = new Int32Array(0);
  private marks = new Uint8Array(0);
  /** Every node held since the walk began (some released since). */
  private readonly ids: number[] = [];
  private count = 0;
  private base = 0;

  /** Nodes held. */
  get size(): number {
    return this.count;
  }

  /** Starts over for a walk of the tree of `version` (versions that replace its nodes are not older). */
  begin(version: number): void {
    this.base = version;
  }

  /** The version that replaced `n`, if it is held. */
  versionOf(n: number): number | undefined {
    const d = n < this.by.length ? this.by[n]! : 0;
    return d === 0 ? undefined : this.base + d - 1;
  }

  /** Holds `n`, replaced by `version`, and notes the in-memory `children` it names (NONE = 0 ones are skipped). */
  hold(n: number, version: number, left: number, right: number, onNamedFreeing: (c: number) => void): void {
    this.room(Math.max(n, left, right));
    if (this.by[n] === 0) this.count++;
    this.by[n] = version - this.base + 1;
    this.marks[n]! &= ~(NAMED | FREEING);
    this.ids.push(n);
    for (const c of [left, right]) {
      if (c === 0) continue;
      const m = this.marks[c]!;
      this.marks[c] = m | NAMED;
      if ((m & FREEING) !== 0) onNamedFreeing(c);
    }
  }

  /** Marks `n` as about to be freed; true when a held node names it (so it must be held instead). */
  freeing(n: number): boolean {
    this.room(n);
    this.marks[n]! |= FREEING;
    return (this.marks[n]! & NAMED) !== 0;
  }

  /** True when `n` was marked freeing and has not been held since; clears the mark. */
  stillFreeing(n: number): boolean {
    const free = (this.marks[n]! & FREEING) !== 0;
    this.marks[n]! &= ~FREEING;
    return free;
  }

  /** `n` need not be held when it is replaced: no held node the walk reads names it. */
  unname(n: number): void {
    if (n < this.marks.length) this.marks[n]! &= ~NAMED;
  }

  /** Stops holding `n` (the caller frees it); false when it was not held. */
  release(n: number): boolean {
    if (this.versionOf(n) === undefined) return false;
    this.by[n] = 0;
    this.count--;
    return true;
  }

  /** Calls `each` on every held node, then forgets them all and gives the marks' memory back. */
  clear(each: (n: number) => void): void {
    for (const n of this.ids) if (this.release(n)) each(n);
    this.ids.length = 0;
    this.by = new Int32Array(0);
    this.marks = new Uint8Array(0);
  }

  private room(n: number): void {
    if (n < this.by.length) return;
    const len = Math.max(1024, n + 1, Math.ceil(this.by.length * 1.5));
    const by = new Int32Array(len);
    by.set(this.by);
    const marks = new Uint8Array(len);
    marks.set(this.marks);
    [this.by, this.marks] = [by, marks];
  }
}
