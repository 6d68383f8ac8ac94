//! The module's small fixed parts: protocol constants, wire names, envelope error texts, conformance helpers and
//! the `consts` marker types.

use dreb_codegen_core::ir::snake_case;
use proc_macro2::TokenStream;
use quote::quote;

use crate::context::{Ctx, Part};
use crate::names::{dedupe, ident};

/// `PROTOCOL_NAME`, `PROTOCOL_VERSION` and the imports; in a [`Part::Protocol`] module also the re-export of
/// the shared types another crate defines, in a [`Part::Types`] module the list of the types it defines.
pub fn header(ctx: &Ctx) -> TokenStream {
    let (name, version) = (&ctx.ir.protocol.name, &ctx.ir.protocol.version);
    let imports = ctx.imports();
    let part = match ctx.part {
        Part::Whole => quote!(),
        Part::Types(sel) => {
            let names = sel.names();
            quote! {
                /// The shared types this module defines (a selection of the spec's `types:`), in spec order.
                pub const TYPES: &[&str] = &[#(#names),*];
            }
        }
        Part::Protocol { types, from } => {
            let from: TokenStream = from.parse().expect("a crate path parses");
            let names = types.names().iter().map(|n| ident(n));
            quote! {
                /// The shared data types, defined once in their own crate.
                pub use #from::{#(#names),*};
            }
        }
    };
    quote! {
        #imports
        #part

        /// Protocol name (`protocol.name`).
        pub const PROTOCOL_NAME: &str = #name;
        /// Protocol revision (`protocol.version`).
        pub const PROTOCOL_VERSION: &str = #version;
    }
}

/// `wire::{commands, calls, events, inputs}`: the exact `type` strings, with `ALL` (`calls` only when the spec has
/// calls).
pub fn wire_names(ctx: &Ctx) -> TokenStream {
    let ir = ctx.ir;
    let section = |module: &str, doc: &str, names: Vec<&str>| {
        let module = ident(module);
        let consts: Vec<_> = dedupe(
            names.iter().map(|n| snake_case(n).to_uppercase()).collect(),
            &["ALL"],
        )
        .iter()
        .map(|c| ident(c))
        .collect();
        let docs = names.iter().map(|n| format!(" `{n}`"));
        let doc = format!(" {doc}");
        quote! {
            #[doc = #doc]
            pub mod #module {
                #(#[doc = #docs] pub const #consts: &str = #names;)*
                /// All of them, in spec order.
                pub const ALL: &[&str] = &[#(#consts),*];
            }
        }
    };
    let commands = section(
        "commands",
        "Command `type` strings.",
        ir.commands.iter().map(|c| c.name.as_str()).collect(),
    );
    let events = section(
        "events",
        "Event `type` strings.",
        ir.events.iter().map(|e| e.name.as_str()).collect(),
    );
    let inputs = section(
        "inputs",
        "Input message `type` strings (stdin messages that are not commands).",
        ir.inputs.iter().map(|e| e.name.as_str()).collect(),
    );
    if ir.calls.is_empty() {
        return quote! {
            /// Exact wire `type` strings of every command, event and input message.
            pub mod wire { #commands #events #inputs }
        };
    }
    let calls = section(
        "calls",
        "Call `type` strings (requests the runtime sends to the peer).",
        ir.calls.iter().map(|c| c.name.as_str()).collect(),
    );
    quote! {
        /// Exact wire `type` strings of every command, call, event and input message.
        pub mod wire { #commands #calls #events #inputs }
    }
}

/// `error_text`: the envelope error templates (the spec's, or the reference's defaults).
pub fn error_texts(ctx: &Ctx) -> TokenStream {
    let env = &ctx.ir.envelope;
    let texts = [
        (
            "PARSE",
            "parse",
            "Failed to parse JSON: {message}",
            "Parse error (`{message}`). Written with `command: \"parse\"` and no `id`.",
        ),
        (
            "UNKNOWN_COMMAND",
            "unknownCommand",
            "Unknown command: {type}",
            "Unknown command `type` (`{type}`).",
        ),
        (
            "COMMAND_FAILED",
            "commandFailed",
            "Command failed: {message}",
            "An unexpected failure inside a handler (`{message}`).",
        ),
        (
            "INVALID_PARAMS",
            "invalidParams",
            "Invalid parameters for {command}: {message}",
            "A known command whose fields do not match the spec (`{command}`, `{message}` names the field).",
        ),
        (
            "SHUTTING_DOWN",
            "shuttingDown",
            "Shutting down: {command} was not run",
            "A command read after shutdown began (`{command}`); it was not run.",
        ),
    ];
    let items = texts.iter().map(|(name, key, default, doc)| {
        let (name, text, doc) = (
            ident(name),
            env.error(key).unwrap_or(default),
            format!(" {doc}"),
        );
        quote!(#[doc = #doc] pub const #name: &str = #text;)
    });
    quote! {
        /// Envelope error templates from `envelope.errors`; `{name}` marks a variable part.
        pub mod error_text { #(#items)* }
    }
}

/// `conformance::reserialize_type`: parse a value as a spec type by name and write it back.
pub fn conformance(ctx: &Ctx) -> TokenStream {
    let names = ctx.ir.types.iter().map(|t| t.name.as_str());
    let types = ctx.ir.types.iter().map(|t| ident(&t.name));
    quote! {
        /// Spec-driven helpers for conformance tests.
        #[doc(hidden)]
        pub mod conformance {
            /// Parses `value` as the spec type `name` and serialises it back; `None` for an unknown name.
            pub fn reserialize_type(
                name: &str,
                value: ::serde_json::Value,
            ) -> ::std::option::Option<::std::result::Result<::serde_json::Value, ::std::string::String>> {
                fn go<T: ::serde::de::DeserializeOwned + ::serde::Serialize>(
                    value: ::serde_json::Value,
                ) -> ::std::result::Result<::serde_json::Value, ::std::string::String> {
                    let typed: T = crate::support::from_value(value)?;
                    ::serde_json::to_value(&typed).map_err(|e| e.to_string())
                }
                ::std::option::Option::Some(match name {
                    #(#names => go::<super::#types>(value),)*
                    _ => return ::std::option::Option::None,
                })
            }
        }
    }
}

/// `consts`: the marker types of every `const` field met so far (emit it last).
pub fn consts(ctx: &Ctx) -> TokenStream {
    let items = ctx.consts().into_iter().map(|(marker, literal)| {
        let marker = ident(&marker);
        quote!(crate::support::const_tag!(#marker = #literal);)
    });
    let shared = match ctx.part {
        Part::Protocol { from, .. } => {
            let from: TokenStream = from.parse().expect("a crate path parses");
            quote!(pub use #from::consts::*;)
        }
        _ => quote!(),
    };
    quote! {
        /// Marker types of `const` fields (union tags): each writes its literal and accepts only that literal.
        pub mod consts { #shared #(#items)* }
    }
}
