// One instance of TypeBox (its CommonJS build) for the host and every extension: `@sinclair/typebox` and its
// subpaths resolve here whether or not the extension has TypeBox installed.

import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/** @type {typeof import("@sinclair/typebox")} */
export const typebox = require("@sinclair/typebox");

/** The subpath modules, loaded on first use. */
export const SUBPATHS = ["compiler", "errors", "parser", "syntax", "system", "type", "value"];

/** @param {string} subpath */
export function loadSubpath(subpath) {
	return require(`@sinclair/typebox/${subpath}`);
}
