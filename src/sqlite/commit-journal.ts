/**
 * The commit journal of durability "normal": each version's packed rows appended to a file beside the store with one
 * write, so that `commit()` may return before the writer thread lands the version in SQLite, off the main thread. Like
 * SQLite's WAL at synchronous NORMAL, the journal outlives the process (the operating system holds what was written),
 * not the machine. The next writer to open the store lands what the journal holds beyond the store's latest version,
 * then removes it.
 * @module
 */
import { closeSync, existsSync, ftruncateSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import { fromFs, IavlError } from "../base/errors.js";
import { unpackWrite, type PackedVersion } from "./packed-write.js";
import type { Connection } from "./connection.js";
import { crc32 } from "./row-sum.js";
import { StoreWriter } from "./store-writer.js";

/** The journal's name in a store folder. */
export const JOURNAL_FILE = "commits.journal";

/** A record's head: a mark, the numbers and the bytes it carries, and the CRC-32 of both (little-endian u32s). */
const HEAD = 16;
const MARK = 0x4a4c5649;
/** Records start at multiples of 8 bytes, so that their numbers stay 8-byte aligned within the file. */
const ALIGN = 8;
const ZEROS = new Uint8Array(ALIGN);

/** The bytes of a record carrying `nums` numbers and `bytes` bytes. */
function recordBytes(nums: number, bytes: number): number {
  return HEAD + nums * 8 + Math.ceil(bytes / ALIGN) * ALIGN;
}

/** The journal a writer appends to; opened empty (what an earlier writer left was landed when the store opened). */
export class CommitJournal {
  private readonly fd: number;
  /** Where the next record goes. */
  private end = 0;

  constructor(readonly path: string) {
    try {
      this.fd = openSync(path, "w");
    } catch (e) {
      throw fromFs(e, `opening ${path}`);
    }
  }

  /** Bytes the journal holds. */
  get bytes(): number {
    return this.end;
  }

  /**
   * Appends `p`. Throws with nothing appended when it cannot (a record cut short is cut off, and would be overwritten
   * by the next one anyway: a record is only read whole and with its checksum).
   */
  append(p: PackedVersion): void {
    if (p.numsUsed > 0xffffffff || p.bytesUsed > 0xffffffff) throw new IavlError("INVALID_ARGUMENT", "a version too large for the commit journal");
    const nums = new Uint8Array(p.nums.buffer, p.nums.byteOffset, p.numsUsed * 8);
    const bytes = p.bytes.subarray(0, p.bytesUsed);
    const head = Buffer.alloc(HEAD);
    head.writeUInt32LE(MARK, 0);
    head.writeUInt32LE(p.numsUsed, 4);
    head.writeUInt32LE(p.bytesUsed, 8);
    head.writeUInt32LE(crc32(bytes, crc32(nums)), 12);
    const size = recordBytes(p.numsUsed, p.bytesUsed);
    let at = this.end;
    try {
      for (const part of [head, nums, bytes, ZEROS.subarray(0, size - HEAD - nums.length - bytes.length)]) {
        for (let done = 0; done < part.length; ) {
          const n = writeSync(this.fd, part, done, part.length - done, at);
          done += n;
          at += n;
        }
      }
    } catch (e) {
      try {
        ftruncateSync(this.fd, this.end);
      } catch {
        // The torn record stays, but its checksum fails: a reopen stops before it, and the next append overwrites it.
      }
      throw fromFs(e, `appending version ${p.nums[0]} to ${this.path}`, "; nothing of it was stored");
    }
    this.end = at;
  }

  /** Empties the journal: every version it holds has landed. */
  cut(): void {
    try {
      ftruncateSync(this.fd, 0);
      this.end = 0;
    } catch (e) {
      throw fromFs(e, `emptying ${this.path}`);
    }
  }

  /** Closes the journal, removing it when `landed` (everything it held is in the store). */
  close(landed: boolean): void {
    closeSync(this.fd);
    if (landed) unlinkSync(this.path);
  }
}

/**
 * Lands the versions the journal at `path` holds beyond the store's latest, in order, each in its own transaction,
 * then removes the journal. Reading stops at the first record that is torn or whose checksum fails (the last append
 * of a process that died), or that does not follow the store's latest version. Returns the versions landed. Run under
 * the writer lock, before anything reads the store.
 */
export function landJournal(db: Connection, path: string): number {
  if (!existsSync(path)) return 0;
  let file: Buffer;
  try {
    file = readFileSync(path);
  } catch (e) {
    throw fromFs(e, `reading ${path}`);
  }
  if (file.length === 0) return 0;
  const store = new StoreWriter(db);
  let latest = store.read.versions.latest()?.version ?? 0;
  let landed = 0;
  for (let at = 0; at + HEAD <= file.length; ) {
    if (file.readUInt32LE(at) !== MARK) break;
    const [nums, bytes] = [file.readUInt32LE(at + 4), file.readUInt32LE(at + 8)];
    const size = recordBytes(nums, bytes);
    if (at + size > file.length) break;
    const numBytes = file.subarray(at + HEAD, at + HEAD + nums * 8);
    const byteRun = file.subarray(at + HEAD + nums * 8, at + HEAD + nums * 8 + bytes);
    if (crc32(byteRun, crc32(numBytes)) !== file.readUInt32LE(at + 12)) break;
    // Copied: the file's buffer need not start at a multiple of 8.
    const w = unpackWrite({ nums: new Float64Array(new Uint8Array(numBytes).buffer), bytes: byteRun });
    const v = w.version.version;
    if (v > latest + 1) break;
    if (v === latest + 1) {
      store.writeVersion(w);
      latest = v;
      landed++;
    }
    at += size;
  }
  try {
    unlinkSync(path);
  } catch (e) {
    throw fromFs(e, `removing ${path}`);
  }
  return landed;
}
