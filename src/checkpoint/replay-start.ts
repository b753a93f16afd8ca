/**
 * Where the replay that rebuilds a version starts: the checkpoint whose tree is loaded, and the first version whose
 * logged operations are replayed on it.
 * @module
 */
import type { ReplayBase, VersionReader } from "../sqlite/version-reader.js";

/** The start of a replay to some version. */
export interface ReplayStart {
  /** The checkpoint loaded; undefined: the empty tree. */
  base: ReplayBase | undefined;
  /** The first version replayed on it. */
  from: number;
}

/** Where a replay to `version` starts (see {@link VersionReader.replayBase}). */
export function replayStart(versions: VersionReader, version: number): ReplayStart {
  const base = versions.replayBase(version);
  return { base, from: base === undefined ? versions.first() : base.version + 1 };
}
