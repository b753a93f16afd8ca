// @ts-check
/**
 * The explorer page of `iavlite serve`, in the browser: the stores and their versions (/v1/status, followed while the
 * page is open), a key looked up with its proofs (/v1/query?prove=true) checked here by `iavlite/verify`, a key's
 * history with each row provable (/v1/history), keys in order a page at a time (/v1/range), and the changes of a
 * version beside the values before them (/v1/changes). The view shown is in the URL, so that Back, Forward, a reload
 * and a shared link show it again.
 *
 * Plain JavaScript modules, checked by tsc (explorer/tsconfig.json): the server sends them as they are, and the page's
 * import map points `iavlite/verify` and `@noble/hashes/` at the modules the server sends beside them. This one starts
 * the page; each view is a module of its own (lookup.js, history.js, keys.js, changes.js), over page.js (elements,
 * bytes, key fields), service.js (the requests), proofs.js (verification and proof bytes), status.js (the stores) and
 * url.js (the view in the URL).
 * @module
 */
import "./lookup.js";
import "./history.js";
import "./keys.js";
import "./changes.js";
import { followStatus, loadStatus } from "./status.js";
import { restore } from "./url.js";

window.addEventListener("popstate", () => void restore());
followStatus();
// The view in the URL is shown once the stores are known (its store picked among them).
void loadStatus().then((ok) => {
  if (ok) document.body.dataset["ready"] = "true";
  return restore();
});
