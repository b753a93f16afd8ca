/**
 * The layers of src/, bottom to top; each folder may import only the folders below it (and its own files), and no
 * module may sit in an import cycle. `npm run check` runs this; so does `npm test`.
 *
 *   base        errors, bytes, hashing, argument checks, thread start
 *   tree        the IAVL algorithms with no storage
 *   sqlite      the one place SQL is written
 *   checkpoint  tree checkpoints: which branches one writes, when, and where a replay starts from
 *   store       the persistent store: store/write (working set, write queue and threads, WAL checkpoints) and
 *               store/read (views, read-only handles, rebuild and replay, walks, the leaf stream); read never
 *               imports write
 *   prune, sync pruning and state sync (peers: neither imports the other)
 *   api         the public facade: Tree, MultiTree, their options and backends, read-only multi-store handles
 *   serve,      the HTTP query service (iavlite serve): v1 API, CometBFT RPC, metrics, the replicas' feed; and
 *   replica     live replicas of a service (iavlite follow) (peers: neither imports the other; they meet on the wire)
 *   cli         the iavlite command
 *
 * Beside the layers:
 *
 *   verify      iavlite/verify, the proof verifier for browsers: imports nothing from another folder of src/, no Node
 *               builtin, no better-sqlite3, and of npm packages only @noble/hashes, so that it loads on its own in
 *               any JavaScript runtime
 */
const LAYERS = ["base", "tree", "sqlite", "checkpoint", "store", "prune|sync", "api", "serve|replica", "cli"];

const above = (i) => LAYERS.slice(i + 1).join("|");
const climbing = LAYERS.slice(0, -1).map((layer, i) => ({
  name: `no-climb-from-${layer.replace("|", "-")}`,
  comment: `src/${layer} may only import the layers below it`,
  severity: "error",
  from: { path: `^src/(${layer})/` },
  to: { path: `^src/((${above(i)})/|index\\.ts$)` },
}));

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "an import cycle ties modules together so that neither can be understood or tested alone",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true },
    },
    ...climbing,
    {
      name: "store-read-not-write",
      comment: "reading a store never depends on the writer's machinery",
      severity: "error",
      from: { path: "^src/store/read/" },
      to: { path: "^src/store/write/" },
    },
    {
      name: "no-peer-prune-sync",
      comment: "pruning and state sync are peers on one layer: neither builds on the other",
      severity: "error",
      from: { path: "^src/(prune|sync)/" },
      to: { path: "^src/(prune|sync)/", pathNot: "^src/$1/" },
    },
    {
      name: "no-peer-serve-replica",
      comment: "the service and its replicas are peers on one layer: they share only the wire format (src/sync)",
      severity: "error",
      from: { path: "^src/(serve|replica)/" },
      to: { path: "^src/(serve|replica)/", pathNot: "^src/$1/" },
    },
    {
      name: "sqlite-only-in-sqlite",
      comment:
        "SQL is written in src/sqlite only; other layers call its functions. The one exception is the plain table " +
        "iavlite bench measures the store against: plain SQL on purpose, since it is the floor, not the store",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/(sqlite/|cli/bench-floor\\.ts$)" },
      to: { path: "better-sqlite3" },
    },
    {
      name: "verify-stands-alone",
      comment: "src/verify is loaded on its own in browsers: it may import only its own files",
      severity: "error",
      from: { path: "^src/verify/" },
      to: { path: "^src/", pathNot: "^src/verify/" },
    },
    {
      name: "verify-no-node",
      comment: "src/verify runs in browsers: no Node builtin (node:crypto, node:buffer, ...)",
      severity: "error",
      from: { path: "^src/verify/" },
      to: { dependencyTypes: ["core"] },
    },
    {
      name: "verify-no-sqlite",
      comment: "src/verify runs in browsers, where no native module loads",
      severity: "error",
      from: { path: "^src/verify/" },
      to: { path: "better-sqlite3" },
    },
    {
      name: "verify-only-noble-hashes",
      comment: "src/verify depends on @noble/hashes alone (pure JS, audited, runs everywhere)",
      severity: "error",
      from: { path: "^src/verify/" },
      to: { path: "node_modules/", pathNot: "node_modules/@noble/hashes/" },
    },
    {
      name: "no-unlayered-src",
      comment: "every module of src/ lives in a layer folder (index.ts is the package entry)",
      severity: "error",
      from: { path: "^src/" },
      to: { path: "^src/[^/]+$", pathNot: "^src/index\\.ts$" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default"], extensions: [".ts", ".js", ".mjs"] },
  },
};
