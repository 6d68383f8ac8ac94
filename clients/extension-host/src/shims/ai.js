// `@dreb/ai` for extensions: TypeBox's `Type` and the schema helpers. Calling a model from an extension
// (`complete`, `stream`, ...) needs a provider in the extension's process, which dreb-rs does not provide.

import { typebox } from "./typebox.js";

export const Type = typebox.Type;

/**
 * A string enum schema (`{ type: "string", enum: [...] }`), which providers that reject `anyOf`/`const` accept.
 * @template {readonly string[]} T
 * @param {T} values
 * @param {{ description?: string, default?: T[number] }} [options]
 */
export function StringEnum(values, options) {
	/** @type {Record<string, unknown>} */
	const schema = { type: "string", enum: [...values] };
	if (options?.description) schema.description = options.description;
	if (options?.default) schema.default = options.default;
	return Type.Unsafe(schema);
}

/** @param {string} name */
function unavailable(name) {
	return () => {
		throw new Error(`@dreb/ai ${name}() is not available to extensions run by dreb-rs (no model providers in the extension host)`);
	};
}

export const complete = async (/** @type {unknown[]} */ ..._args) => unavailable("complete")();
export const completeSimple = async (/** @type {unknown[]} */ ..._args) => unavailable("completeSimple")();
export const stream = unavailable("stream");
export const streamSimple = unavailable("streamSimple");
export const registerApiProvider = unavailable("registerApiProvider");
export const getModel = () => undefined;
export const getModels = () => [];
export const getProviders = () => [];
export const getEnvApiKey = () => undefined;
