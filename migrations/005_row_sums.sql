-- Each leaves row written from now on carries a checksum of its key, version and value (src/sqlite/row-sum.ts): a
-- read checks a CRC-32 of the row instead of rehashing the value into its leaf hash (two SHA-256 and a 32-byte blob
-- read per get), so that bytes the disk damaged are CORRUPT at a small part of the cost. Rows written before keep a
-- NULL sum and are checked against their leaf hash, as they were.
ALTER TABLE leaves ADD COLUMN sum INTEGER;
