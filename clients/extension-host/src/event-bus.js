// `dreb.events`: the in-process event bus of the reference (`emit(channel, data)`, `on(channel, handler)` returning
// an unsubscribe function). A handler's failure is logged, never thrown at the emitter.

import { EventEmitter } from "node:events";

/**
 * @returns {{ emit(channel: string, data: unknown): void, on(channel: string, handler: (data: unknown) => unknown): () => void, clear(): void }}
 */
export function createEventBus() {
	const emitter = new EventEmitter();
	emitter.setMaxListeners(0);
	return {
		emit(channel, data) {
			emitter.emit(channel, data);
		},
		on(channel, handler) {
			/** @param {unknown} data */
			const safe = async (data) => {
				try {
					await handler(data);
				} catch (e) {
					process.stderr.write(
						`extension host: event bus handler failed (${channel}): ${e instanceof Error ? e.message : String(e)}\n`,
					);
				}
			};
			emitter.on(channel, safe);
			return () => {
				emitter.off(channel, safe);
			};
		},
		clear() {
			emitter.removeAllListeners();
		},
	};
}
