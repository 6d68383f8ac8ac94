// `@dreb/tui` for extensions: dreb-rs has no terminal UI in the extension's process, so these are inert stand-ins
// (enough that an extension importing them loads, and that code building components does not fail). What they
// render is never shown.

const ANSI = /\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b_[^\x07]*\x07/g;

/** The width of text in terminal cells, escape sequences excluded (each code point counts as one cell). */
export function visibleWidth(/** @type {string} */ text) {
	return [...String(text).replace(ANSI, "")].length;
}

/** Cut text to `width` cells, ending with `ellipsis` when cut. */
export function truncateToWidth(/** @type {string} */ text, /** @type {number} */ width, ellipsis = "...") {
	const plain = [...String(text).replace(ANSI, "")];
	if (plain.length <= width) return String(text);
	const keep = Math.max(0, width - [...ellipsis].length);
	return plain.slice(0, keep).join("") + ellipsis;
}

/** Wrap text at `width` cells (escape sequences removed). */
export function wrapTextWithAnsi(/** @type {string} */ text, /** @type {number} */ width) {
	const out = [];
	for (const line of String(text).replace(ANSI, "").split("\n")) {
		const chars = [...line];
		if (chars.length === 0) out.push("");
		for (let i = 0; i < chars.length; i += Math.max(1, width)) out.push(chars.slice(i, i + Math.max(1, width)).join(""));
	}
	return out;
}

export const CURSOR_MARKER = "\x1b_pi:c\x07";

/** Key names (`Key.enter`, `Key.ctrl("c")`, ...): strings that no input ever matches here. */
export const Key = new Proxy(
	{},
	{
		get(_t, prop) {
			if (typeof prop === "symbol") return undefined;
			return (/** @type {unknown[]} */ ...args) => [prop, ...args].join("+");
		},
	},
);
export const matchesKey = () => false;
export const parseKey = () => undefined;
export const isKeyRelease = () => false;
export const isKeyRepeat = () => false;

/** The base of every stand-in component. */
export class Component {
	constructor(/** @type {unknown[]} */ ..._args) {}
	render(/** @type {number} */ _width) {
		return /** @type {string[]} */ ([]);
	}
	invalidate() {}
	handleInput(/** @type {string} */ _data) {}
	dispose() {}
}

export class Text extends Component {
	constructor(text = "", /** @type {unknown[]} */ ..._rest) {
		super();
		this.text = String(text);
	}
	setText(/** @type {string} */ text) {
		this.text = String(text);
	}
	render(/** @type {number} */ width) {
		return wrapTextWithAnsi(this.text, width);
	}
}
export class TruncatedText extends Text {}
export class Markdown extends Text {}
export class Spacer extends Component {}
export class Image extends Component {}
export class Container extends Component {
	constructor() {
		super();
		/** @type {Component[]} */
		this.children = [];
	}
	addChild(/** @type {Component} */ c) {
		this.children.push(c);
	}
	removeChild(/** @type {Component} */ c) {
		this.children = this.children.filter((x) => x !== c);
	}
	clear() {
		this.children = [];
	}
	render(/** @type {number} */ width) {
		return this.children.flatMap((c) => (typeof c?.render === "function" ? c.render(width) : []));
	}
}
export class Box extends Container {}
export class SelectList extends Component {}
export class SettingsList extends Component {}
export class Input extends Component {
	getValue() {
		return "";
	}
	setValue(/** @type {string} */ _v) {}
}
export class Editor extends Input {
	getText() {
		return "";
	}
	setText(/** @type {string} */ _t) {}
}
export class Loader extends Component {
	start() {}
	stop() {}
	setMessage(/** @type {string} */ _m) {}
}
export class CancellableLoader extends Loader {}
export class TUI extends Container {
	requestRender() {}
	start() {}
	stop() {}
}
