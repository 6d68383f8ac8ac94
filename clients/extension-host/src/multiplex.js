// One host process for every JavaScript extension of a session (`dreb-extension-host --multiplex`): the runtime's
// frames carry a `channel` (protocol/extension.yaml, the envelope); each channel is one extension with a `Host` of
// its own, created when its first frame (`initialize`, which names the extension) arrives. Frames written for a
// channel carry it back. The extensions share `dreb.events`, as the reference's extensions of one session do.

import { StringDecoder } from "node:string_decoder";
import { createEventBus } from "./event-bus.js";
import { Host } from "./host.js";

/**
 * @param {object} options
 * @param {NodeJS.ReadableStream} options.input the runtime's frames
 * @param {(line: string) => void} options.writeLine the protocol stream
 * @param {(text: string) => void} options.log the runtime's log
 * @param {() => void} [options.onClose] stdin closed
 * @returns {{ hosts: Map<string, Host> }}
 */
export function serveMany({ input, writeLine, log, onClose = () => {} }) {
	const events = createEventBus();
	/** @type {Map<string, Host>} */
	const hosts = new Map();

	/** @param {string} channel */
	const hostFor = (channel) => {
		let host = hosts.get(channel);
		if (host) return host;
		// The channel goes first in every frame written for it (the runtime reads it back before the rest).
		const prefix = `{"channel":${JSON.stringify(channel)},`;
		host = new Host({
			input: undefined,
			writeLine: (line) => writeLine(line.startsWith("{") && line !== "{}\n" ? prefix + line.slice(1) : line),
			log: (text) => log(host?.info.extensionPath ? `[${host.info.extensionPath}] ${text}` : text),
			extensionPath: undefined,
			events,
		});
		hosts.set(channel, host);
		host.start();
		return host;
	};

	/** @param {string} line */
	const receive = (line) => {
		const text = line.endsWith("\r") ? line.slice(0, -1) : line;
		if (!text.trim()) return;
		let frame;
		try {
			frame = JSON.parse(text);
		} catch {
			log(`extension host: dropped a line that is not JSON: ${text.slice(0, 200)}`);
			return;
		}
		if (frame === null || typeof frame !== "object" || Array.isArray(frame)) {
			log(`extension host: dropped a line that is not a JSON object: ${text.slice(0, 200)}`);
			return;
		}
		const { channel, ...rest } = frame;
		if (typeof channel !== "string" || !channel) {
			log(`extension host: dropped a frame without a channel: ${text.slice(0, 200)}`);
			return;
		}
		hostFor(channel).conn.receiveFrame(rest);
	};

	const decoder = new StringDecoder("utf8");
	let buffer = "";
	input.on("data", (chunk) => {
		buffer += typeof chunk === "string" ? chunk : decoder.write(chunk);
		let nl = buffer.indexOf("\n");
		while (nl >= 0) {
			const line = buffer.slice(0, nl);
			buffer = buffer.slice(nl + 1);
			receive(line);
			nl = buffer.indexOf("\n");
		}
	});
	input.on("end", () => {
		buffer += decoder.end();
		if (buffer.trim()) receive(buffer);
		buffer = "";
		for (const host of hosts.values()) host.conn.close();
		onClose();
	});
	input.on("error", (e) => {
		log(`extension host: stdin error: ${e instanceof Error ? e.message : String(e)}`);
	});
	return { hosts };
}
