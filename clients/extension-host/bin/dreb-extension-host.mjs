#!/usr/bin/env node
// dreb-extension-host <extension path>: runs one extension of the TypeScript reference as an extension process of
// dreb-rs. The runtime starts it in the session's cwd and speaks the extension protocol over stdin/stdout.
// dreb-extension-host --multiplex: runs every JavaScript extension of a session, one per `channel` of the frames.

import { Console } from "node:console";
import { format } from "node:util";

// stdout carries protocol frames only: keep its writer for them, and send everything else the extension prints
// (console.*, process.stdout.write) to stderr, which goes to the runtime's log.
const writeProtocol = process.stdout.write.bind(process.stdout);
const stderrWrite = process.stderr.write.bind(process.stderr);
process.stdout.write = /** @type {typeof process.stdout.write} */ (
	/** @type {unknown} */ ((/** @type {any} */ chunk, /** @type {any} */ encoding, /** @type {any} */ cb) => stderrWrite(chunk, encoding, cb))
);
const toStderr = new Console({ stdout: process.stderr, stderr: process.stderr });
for (const key of /** @type {(keyof Console)[]} */ (Object.keys(Console.prototype))) {
	const method = toStderr[key];
	if (typeof method === "function") {
		// @ts-ignore assigning a console method
		console[key] = method.bind(toStderr);
	}
}

// The runtime closing our stdout ends the protocol: nothing more can be said.
process.stdout.on("error", (e) => {
	stderrWrite(`extension host: stdout closed (${/** @type {NodeJS.ErrnoException} */ (e).code ?? e.message}); exiting\n`);
	process.exit(0);
});

const log = (/** @type {string} */ text) => {
	stderrWrite(`${text}\n`);
};

// An extension's stray promise or timer must not take the host (and every call in flight) down.
process.on("uncaughtException", (e) => log(`extension host: uncaught exception: ${e?.stack ?? format(e)}`));
process.on("unhandledRejection", (e) => log(`extension host: unhandled rejection: ${e instanceof Error ? e.stack : format(e)}`));

const args = process.argv.slice(2);
if (args[0] === "--help" || args[0] === "-h") {
	log(
		"usage: dreb-extension-host <extension path> | --multiplex\nRuns one TypeScript/JavaScript dreb extension over the extension protocol (stdin/stdout),\nor (--multiplex) every extension the runtime opens a channel for.",
	);
	process.exit(0);
}
if (args[0] === "--version") {
	const { readFileSync } = await import("node:fs");
	const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
	log(pkg.version);
	process.exit(0);
}

// The runtime closes stdin after session_shutdown: the extensions' timers and handles must not keep us alive.
const onClose = () => setImmediate(() => process.exit(0));

if (args[0] === "--multiplex") {
	const { serveMany } = await import("../src/multiplex.js");
	serveMany({ input: process.stdin, writeLine: (line) => writeProtocol(line), log, onClose });
} else {
	await serveOne();
}

async function serveOne() {
	const { Host } = await import("../src/host.js");
	const host = new Host({
		input: process.stdin,
		writeLine: (line) => {
			writeProtocol(line);
		},
		log,
		extensionPath: args[0],
		onClose,
	});
	host.start();
}
