/**
 * Reads of a store file, shared by the writer, read-only handles and prune workers, by what they read.
 * @module
 */
import type { Connection } from "./connection.js";
import { BranchReader } from "./branch-reader.js";
import { LeafReader } from "./leaf-reader.js";
import { PageReader } from "./page-rows.js";
import { VersionReader } from "./version-reader.js";

/** The readers of one connection: version rows, leaves rows, branch rows and page rows. */
export class StoreReader {
  readonly versions: VersionReader;
  readonly leaves: LeafReader;
  readonly branches: BranchReader;
  readonly pages: PageReader;

  constructor(readonly db: Connection) {
    this.versions = new VersionReader(db);
    this.leaves = new LeafReader(db);
    this.branches = new BranchReader(db);
    this.pages = new PageReader(db);
  }
}
