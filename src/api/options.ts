/**
 * Options of the public constructors, validated with zod so that a bad option names its field and rule.
 * @module
 */
import { z } from "zod";
import type { IavlError } from "../base/errors.js";

/** Options of {@link Tree.memory}. */
export const memoryOptionsSchema = z
  .object({
    /** The version the first commit gets (as cosmos/iavl `InitialVersion`); default 1. */
    initialVersion: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
  })
  .strict();

/** Options of {@link Tree.memory}. */
export type MemoryOptions = z.input<typeof memoryOptionsSchema>;

/** Options of `Tree.open`. */
export const openOptionsSchema = z
  .object({
    /** The version the first commit of a new store gets; default 1. */
    initialVersion: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
    /**
     * Versions between checkpoints, when every branch node not yet stored is written (leaves are written every
     * version). Fewer means a shorter replay after a crash and for proofs of old versions, and less disk: a prune
     * keeps the values written since the checkpoint replays start from. More means less writing: under a churn that
     * changes most pages between two checkpoints, each rewrites nearly the whole tree (250 ran a 1M-key churn 16 %
     * faster, and held the mixed profile's three stores at 1.31× the kept rows against 1.08×). Default 100.
     */
    checkpointInterval: z.number().int().min(1).max(1_000_000).default(100),
    /**
     * A checkpoint's rows are written over the commits that follow it, a step per commit of at least this many rows
     * (default 256), so that no one commit stalls on a whole tree. Higher ends small checkpoints sooner; lower spreads
     * even a small tree's checkpoint over several commits (the lifecycle simulator's lives do, to go through it).
     */
    checkpointStepRows: z.number().int().min(1).max(1_000_000).default(256),
    /**
     * Memory the working set may use for tree nodes, in MiB; clean nodes beyond it are evicted. Default 512: at a
     * million keys the whole tree then stays in memory (churn at twice the rate of 256) within ~930 MiB of peak RSS.
     */
    memoryBudgetMiB: z.number().int().min(8).max(1_048_576).default(512),
    /**
     * `"normal"`: nothing committed is lost when the process dies; `"full"`: nor on power loss (fsync per commit);
     * `"async"`: commit returns once the hash is known and a background writer lands versions in order.
     */
    durability: z.enum(["normal", "full", "async"]).default("normal"),
    /**
     * With durability "normal": `commit()` appends the version to the store's commit journal (one write) and a writer
     * thread lands it in SQLite, off the caller's thread; the next writer to open the store lands what a process that
     * died left in the journal. This handle reads the version at once; other processes, read-only handles and the
     * CLI see it once it lands (`await flush()` waits for that). `false`: land it inline, so that it is in SQLite when
     * `commit()` returns. Default: true, but false with walCheckpoints "external", where a replicator ships what the
     * WAL holds and never sees the journal (a version commit() returned must reach the replica).
     */
    commitJournal: z.boolean().optional(),
    /** With durability "async", or the commit journal: versions that may wait for the writer thread before `commit()` blocks. Default 8. */
    asyncQueue: z.number().int().min(1).max(1024).default(8),
    /** Versions per shard of the node tables, fixed when the store is created. Default 1000. */
    shardSize: z.number().int().min(1).max(1_000_000).default(1000),
    /**
     * Prune automatically, keeping this many recent versions (default: keep everything). A multi-store's store also
     * keeps the folder's last whole version, which a crash may bring it back to: with 1, it keeps 2 (its prunes are
     * asked as it commits, when the folder's last whole version is the one before).
     */
    keepRecent: z.number().int().min(1).optional(),
    /** With keepRecent: also keep every Nth version as a snapshot. */
    keepEvery: z.number().int().min(1).optional(),
    /**
     * How long a write waits for another connection's lock (a prune's short transactions, a WAL checkpoint)
     * before it is retried, in ms; default 10000. Writes retry for as long again before they fail.
     */
    busyTimeoutMs: z.number().int().min(0).max(600_000).default(10_000),
    /**
     * Who checkpoints the write-ahead log. `"own"` (default): iavlite, from a thread after commits, and before a
     * commit once the WAL passed 256 MiB. `"external"`: a replicator that follows the WAL and checkpoints it itself,
     * such as Litestream; iavlite then never checkpoints (a checkpoint racing Litestream's can make it miss WAL frames
     * and start a new generation, a full snapshot), and the WAL grows until the replicator checkpoints it. A
     * multi-store's commit marker follows the same setting.
     */
    walCheckpoints: z.enum(["own", "external"]).default("own"),
    /**
     * Receives failures of background work: automatic prunes (retried after the next commits, which go on meanwhile),
     * and, with durability "async", a failed write that no commit or flush reported before `close()`. Default:
     * `process.emitWarning`.
     */
    onBackgroundError: z.custom<(error: IavlError) => void>((v) => typeof v === "function", "must be a function").optional(),
  })
  .strict();

/** Options of `Tree.open`, as given. */
export type OpenOptions = z.input<typeof openOptionsSchema>;
/** Options of `Tree.open`, with defaults filled in. */
export type ResolvedOpenOptions = z.output<typeof openOptionsSchema>;

/** Options of `Tree.import`: the snapshot's version and expected hash, and the new store's open options. */
export const importOptionsSchema = openOptionsSchema.partial().extend({
  /** The version the snapshot is of. */
  version: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  /** When given, the import is refused unless the rebuilt root hash equals it. */
  expectedHash: z.custom<Uint8Array>((v) => v instanceof Uint8Array, "must be a Uint8Array").optional(),
  /** Called now and then with the number of items imported so far. */
  onProgress: z.custom<(items: number) => void>((v) => typeof v === "function", "must be a function").optional(),
});

/** Options of `Tree.import`. */
export type ImportOptions = z.input<typeof importOptionsSchema>;
