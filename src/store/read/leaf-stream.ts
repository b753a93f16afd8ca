/**
 * The leaves of one version in key order, as an export or audit walk consumes them: read on the walk's own thread
 * for small trees, and for large ones by a thread of their own (leaf-thread.ts) that runs ahead of the walk, so that
 * the random reads of leaves rows overlap the walk's reads of branches on the other core.
 * @module
 */
import { MessageChannel, receiveMessageOnPort, type MessagePort } from "node:worker_threads";
import { IavlError, type ErrorCode } from "../../base/errors.js";
import { FIRST_SLOT, ThreadChannel } from "../../base/thread-channel.js";
import type { LeafPageRow } from "../../sqlite/leaf-reader.js";
import { putBytes, takeBytes, type Cursor, type PackedWrite } from "../../sqlite/packed-write.js";
import type { StoreReader } from "../../sqlite/store-reader.js";

/** Rows per page. */
export const LEAF_PAGE = 2048;
/**
 * Bytes of keys and values a page read on the caller's thread aims at: 2048 leaves of 16 KiB values would be 32 MiB,
 * held for as long as the walk's consumer (a snapshot stream to a client that stopped reading) takes.
 */
const INLINE_PAGE_BYTES = 1 << 18;
/** Rows of the first page read on the caller's thread, before the size of a leaf is known. */
const INLINE_FIRST_PAGE = 64;
/** Trees with fewer leaves are not worth a thread. */
const THREAD_FROM = 20_000;

/** Slots of the channel to the thread: pages posted, … */
export const POSTED = FIRST_SLOT;
/** … and pages taken. */
export const TAKEN = FIRST_SLOT + 1;
const SLOTS = FIRST_SLOT + 2;
/** Pages the thread may post ahead of the walk. */
export const AHEAD = 4;

/** What the owner passes to the thread. */
export interface LeafThreadData {
  file: string;
  version: number;
  /** The rollbacks the store had recorded when the read began (see VersionReader.state). */
  since: number;
  /** Values only as their leaf hashes vouch for them (see LeafReader.page). */
  checked: boolean;
  port: MessagePort;
}

/** A page as the thread posts it: per row its id, version, and key, hash and value (see packed-write.ts). */
export interface PackedPage extends PackedWrite {
  /** The last page. */
  last: boolean;
}

/** A failure as the thread posts it. */
export interface LeafFailure {
  failed: { code: ErrorCode | undefined; message: string };
}

/** Packs rows for the trip to the owner. */
export function packPage(rows: readonly LeafPageRow[], last: boolean): PackedPage {
  let n = 0;
  for (const r of rows) n += r.key.length + (r.hash?.length ?? 0) + (r.value?.length ?? 0);
  const page: PackedPage = { nums: new Float64Array(rows.length * 5), bytes: new Uint8Array(n), last };
  const c: Cursor = { i: 0, at: 0 };
  for (const r of rows) {
    page.nums[c.i++] = r.id;
    page.nums[c.i++] = r.version;
    putBytes(page, c, r.key);
    putBytes(page, c, r.hash);
    putBytes(page, c, r.value);
  }
  return page;
}

function unpack(page: PackedPage): LeafPageRow[] {
  const rows: LeafPageRow[] = [];
  const n = page.nums;
  for (const c: Cursor = { i: 0, at: 0 }; c.i < n.length; ) {
    const id = n[c.i++]!;
    const version = n[c.i++]!;
    rows.push({ id, version, key: takeBytes(page, c)!, hash: takeBytes(page, c), value: takeBytes(page, c) });
  }
  return rows;
}

/** The next leaves row of a version in key order; undefined after the last. */
export interface LeafSource {
  next(): LeafPageRow | undefined;
  close(): void;
}

/** Leaves read on the caller's thread, a page at a time through `read`. */
class InlineLeaves implements LeafSource {
  private rows: LeafPageRow[] = [];
  private at = 0;
  private after: Uint8Array | undefined;
  private done = false;
  private pageRows = INLINE_FIRST_PAGE;

  constructor(
    private readonly store: StoreReader,
    private readonly version: number,
    private readonly read: <T>(fn: () => T) => T,
    private readonly checked: boolean,
  ) {}

  next(): LeafPageRow | undefined {
    while (this.at === this.rows.length) {
      if (this.done) return undefined;
      const page = this.read(() => this.store.leaves.page(this.version, this.after, this.pageRows, this.checked));
      this.rows = page.rows;
      // The next page's rows from this one's bytes: about INLINE_PAGE_BYTES whatever the values' size.
      const bytes = page.rows.reduce((n, r) => n + r.key.length + (r.value?.length ?? 0), 0);
      this.pageRows = Math.max(16, Math.min(LEAF_PAGE, Math.floor((INLINE_PAGE_BYTES * page.rows.length) / Math.max(1, bytes))));
      this.at = 0;
      this.after = page.next;
      this.done = page.next === undefined;
    }
    return this.rows[this.at++];
  }

  close(): void {}
}

/** The longest the walk waits for one page from the thread before it gives up. */
const PAGE_WAIT_MS = 120_000;

/** Leaves read ahead by a thread of their own. */
class ThreadLeaves implements LeafSource {
  private readonly port: MessagePort;
  private readonly ch: ThreadChannel;
  private rows: LeafPageRow[] = [];
  private at = 0;
  private done = false;

  constructor(file: string, version: number, since: number, checked: boolean) {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.ch = ThreadChannel.start<LeafThreadData>(import.meta.url, "leaf-thread", SLOTS, { file, version, since, checked, port: port2 }, [port2]);
  }

  next(): LeafPageRow | undefined {
    while (this.at === this.rows.length) {
      if (this.done) return undefined;
      this.take();
    }
    return this.rows[this.at++];
  }

  private take(): void {
    const deadline = Date.now() + PAGE_WAIT_MS;
    for (;;) {
      const m = receiveMessageOnPort(this.port)?.message as PackedPage | LeafFailure | undefined;
      if (m !== undefined) {
        this.ch.slots.add(TAKEN);
        if ("failed" in m) throw new IavlError(m.failed.code ?? "CORRUPT", m.failed.message);
        this.rows = unpack(m);
        this.at = 0;
        this.done = m.last;
        return;
      }
      if (Date.now() > deadline || this.ch.isGone) throw new IavlError("IO_ERROR", "the thread reading the leaves stopped answering");
      // Posted counts pages sent; wait for the next one (a message can arrive just before its count).
      this.ch.slots.wait(POSTED, this.ch.slots.get(TAKEN), 50);
    }
  }

  close(): void {
    this.ch.close(TAKEN);
    this.port.close();
  }
}

/**
 * The leaves of `version` in key order for a walk over a tree of `size` leaves; `checked` as for
 * {@link LeafReader.page}.
 */
export function leafSource(
  store: StoreReader,
  file: string,
  version: number,
  since: number,
  size: number,
  read: <T>(fn: () => T) => T,
  checked: boolean,
): LeafSource {
  return size >= THREAD_FROM ? new ThreadLeaves(file, version, since, checked) : new InlineLeaves(store, version, read, checked);
}
