-- Branch rows are deleted as the tree stops needing them, instead of only with their whole shard: each version
-- records the stored branches its changes replaced (packed by src/sqlite/orphaned-branches.ts), and a prune deletes
-- those of versions up to its replay base that no kept snapshot reads. A shard left empty is dropped.
CREATE TABLE orphaned_branches (
  version INTEGER PRIMARY KEY,
  nodes   BLOB    NOT NULL
);

-- The first version whose orphans are recorded: branches replaced before it (a store made before this migration)
-- leave only with their shard, through the copy of the survivors that pruning did before.
INSERT OR REPLACE INTO meta (name, value) SELECT 'orphans_from', coalesce(max(version), 0) + 1 FROM versions;
