/**
 * A check of the write-ahead log's frames before a store is opened. SQLite reads the WAL up to its first frame whose
 * checksum fails and silently drops everything after it: a torn last write after a power loss is expected to go so,
 * but damage in the middle of the log would make the store open at an older version, every read consistent with it
 * and every version committed after the damage gone without a word. The frames after a broken one tell the two apart:
 * a commit frame of the same log (the header's salts) whose checksum follows from the stored checksum of the frame
 * before it was committed after the damaged one, so the log was damaged, not cut short. (Frames left past the end by
 * a transaction that rolled back, after a full disk say, also chain together, but none of them is a commit frame.)
 *
 * Frame format and checksum: https://www.sqlite.org/fileformat2.html#walformat
 * @module
 */
import { closeSync, existsSync, fstatSync, openSync, readSync } from "node:fs";
import { IavlError } from "../base/errors.js";

const HEADER = 32;
const FRAME_HEADER = 24;
/** Frames read at a time. */
const BATCH = 64;

/** A running WAL checksum: the two 32-bit sums. */
type Sums = [number, number];

/** SQLite's WAL checksum of `b[from, to)` (8-byte steps) continued from `s`, words in the log's byte order. */
function checksum(b: Buffer, from: number, to: number, s: Sums, bigEndian: boolean): Sums {
  let s0 = s[0];
  let s1 = s[1];
  for (let i = from; i < to; i += 8) {
    const x0 = bigEndian ? b.readUInt32BE(i) : b.readUInt32LE(i);
    const x1 = bigEndian ? b.readUInt32BE(i + 4) : b.readUInt32LE(i + 4);
    s0 = (s0 + x0 + s1) >>> 0;
    s1 = (s1 + x1 + s0) >>> 0;
  }
  return [s0, s1];
}

/** Where a WAL was found damaged: the first frame SQLite drops, and a later frame that proves it was written. */
export interface WalDamage {
  frames: number;
  /** Frames SQLite reads (up to the last commit before the damage). */
  kept: number;
  /** The first frame whose checksum fails. */
  broken: number;
  /** A commit frame after it that belongs to the same log. */
  laterFrame: number;
}

/** Finds damage in the WAL beside database `file` (undefined when it is whole, cut short, or absent). */
export function walDamage(file: string): WalDamage | undefined {
  const wal = `${file}-wal`;
  if (!existsSync(wal)) return undefined;
  const fd = openSync(wal, "r");
  try {
    const size = fstatSync(fd).size;
    if (size < HEADER) return undefined;
    const head = Buffer.alloc(HEADER);
    readSync(fd, head, 0, HEADER, 0);
    const magic = head.readUInt32BE(0);
    if (magic !== 0x377f0682 && magic !== 0x377f0683) return undefined;
    const bigEndian = (magic & 1) === 1;
    const pageSize = head.readUInt32BE(8);
    if (pageSize < 512 || pageSize > 65536 || (pageSize & (pageSize - 1)) !== 0) return undefined;
    const salt1 = head.readUInt32BE(16);
    const salt2 = head.readUInt32BE(20);
    const stored = (b: Buffer, at: number): Sums => [b.readUInt32BE(at), b.readUInt32BE(at + 4)];
    const headerSums = stored(head, 24);
    const headerWhole = checksum(head, 0, 24, [0, 0], bigEndian).every((x, i) => x === headerSums[i]);
    const frameBytes = FRAME_HEADER + pageSize;
    const frames = Math.floor((size - HEADER) / frameBytes);
    // While the chain holds, `sums` is the running checksum; after it breaks, each frame is judged on its own
    // against the stored sums of the frame before it.
    let chain = headerWhole;
    let sums: Sums = headerSums;
    let previous: Sums = headerSums;
    let kept = 0;
    let broken = headerWhole ? -1 : 0;
    const buf = Buffer.alloc(frameBytes * BATCH);
    for (let first = 0; first < frames; first += BATCH) {
      const n = Math.min(BATCH, frames - first);
      readSync(fd, buf, 0, n * frameBytes, HEADER + first * frameBytes);
      for (let j = 0; j < n; j++) {
        const at = j * frameBytes;
        const i = first + j;
        const own = stored(buf, at + 16);
        const sameLog = buf.readUInt32BE(at + 8) === salt1 && buf.readUInt32BE(at + 12) === salt2;
        const follows = (from: Sums): boolean => {
          const s = checksum(buf, at + frameBytes - pageSize, at + frameBytes, checksum(buf, at, at + 8, from, bigEndian), bigEndian);
          return s[0] === own[0] && s[1] === own[1];
        };
        if (chain) {
          if (sameLog && follows(sums)) {
            sums = own;
            if (buf.readUInt32BE(at + 4) !== 0) kept = i + 1;
          } else {
            chain = false;
            broken = i;
          }
        } else if (sameLog && follows(previous) && buf.readUInt32BE(at + 4) !== 0) {
          return { frames, kept, broken, laterFrame: i };
        }
        previous = own;
      }
    }
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** Throws `CORRUPT` when the WAL beside `file` is damaged (see {@link walDamage}), saying what the store would lose. */
export function checkWal(file: string): void {
  const d = walDamage(file);
  if (d === undefined) return;
  throw new IavlError(
    "CORRUPT",
    `${file}-wal is damaged at frame ${d.broken + 1} of ${d.frames} (frame ${d.laterFrame + 1} was written after it): SQLite would ` +
      `open the store as it was ${d.kept === 0 ? "before any frame of the WAL" : `at frame ${d.kept}`} and silently drop the versions ` +
      `committed after that. Restore the store from a replica or a backup; to open it as it was before the WAL, losing every ` +
      `version in it, move the -wal file away.`,
  );
}
