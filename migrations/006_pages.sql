-- Layout 3 for every store: the branch rows of at most 16 leaves that stores written before migration 004 (or by
-- an import before 2026-12-06) keep under their spine are taken into pages, so that a change past the memory budget
-- reads one row whatever wrote the store. Too much work for one transaction on a large store, so this only marks the
-- store; src/sqlite/migrations/006-pages.ts does the work on every writer's open until the mark is gone (readers
-- refuse the store meanwhile). A store without branch tables has nothing to convert.
INSERT OR REPLACE INTO meta (name, value)
  SELECT 'pages_upgrade', 1 WHERE EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name LIKE 'branch\_%' ESCAPE '\');
