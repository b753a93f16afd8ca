/**
 * A key's history read from a store: one range of the leaves table's `(key, version)` index, no replay and no tree.
 * @module
 */
import { historyPage, historyRange, type HistoryQuery, type KeyHistory } from "../../tree/store-contract.js";
import { snapshot } from "../../sqlite/connection.js";
import type { StoreReader } from "../../sqlite/store-reader.js";

/** The page of `key`'s history that `q` asks for, of a store whose latest version (as the caller reads it) is `latest`. */
export function storedHistory(read: StoreReader, key: Uint8Array, q: HistoryQuery, latest: number): KeyHistory {
  // One snapshot: a prune between the kept range's read and the rows' would take rows the range promises.
  return snapshot(read.db, () => readHistory(read, key, q, latest));
}

function readHistory(read: StoreReader, key: Uint8Array, q: HistoryQuery, latest: number): KeyHistory {
  const unbroken = read.versions.unbrokenFrom();
  const range = historyRange(q, unbroken, latest);
  const rows = read.leaves.history(key, range.from, range.to, q.limit + 1, q.reverse);
  if (!q.before) return historyPage(range, q, rows);
  // The value at from − 1 is known while that version is kept (its rows are), or when no version came before `from`
  // (not after an import, whose rows are its own version's leaves).
  const known = range.from > unbroken! || (range.from === read.versions.first() && (read.versions.leavesPrunedTo() ?? 0) < range.from);
  return historyPage(range, q, rows, known ? (read.leaves.before(key, range.from) ?? null) : undefined);
}
