// `@dreb/agent-core` for extensions: they import its types only (erased when the extension is loaded).
export {};
