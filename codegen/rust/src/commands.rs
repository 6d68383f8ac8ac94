//! Commands: `<Command>Params` structs, the `Command` and `ResponseData` enums, the `RpcHandler` trait (one
//! async method per command) and the blanket `CommandService` impl that `dispatch` drives.

use dreb_codegen_core::ir::{Command, CommandResult};
use proc_macro2::{Ident, TokenStream};
use quote::quote;

use crate::context::{Ctx, Paths};
use crate::docs::Doc;
use crate::names::{dedupe, field_name, ident, variant_name};
use crate::structs::{StructSpec, struct_def};

/// Everything about commands, in module order.
pub fn commands(ctx: &Ctx) -> TokenStream {
    let params: TokenStream = ctx
        .ir
        .commands
        .iter()
        .map(|c| {
            struct_def(
                ctx,
                &StructSpec {
                    name: &format!("{}Params", c.pascal_name()),
                    doc: Doc::of(format!(
                        "Parameters of the `{}` command (the request's fields besides `id` and `type`).",
                        c.name
                    )),
                    fields: &c.params,
                    additional: false,
                    shared: false,
                },
            )
        })
        .collect();
    let list = CommandList::new(ctx);
    let command = list.command_enum(ctx);
    let response = list.response_data(ctx);
    let handler = list.handler(ctx);
    quote!(#params #command #response #handler)
}

/// The commands with their variant and method names.
struct CommandList<'a> {
    commands: &'a [Command],
    /// `Command` / `ResponseData` variants.
    variants: Vec<Ident>,
    /// `<Command>Params` types.
    params: Vec<Ident>,
    /// `RpcHandler` methods.
    methods: Vec<Ident>,
    /// Wire names.
    wire: Vec<&'a str>,
}

impl<'a> CommandList<'a> {
    fn new(ctx: &Ctx<'a>) -> Self {
        let commands = &ctx.ir.commands[..];
        let variants = dedupe(
            commands.iter().map(|c| variant_name(&c.name)).collect(),
            &["Unknown"],
        );
        CommandList {
            commands,
            variants: variants.iter().map(|n| ident(n)).collect(),
            params: commands
                .iter()
                .map(|c| ident(&format!("{}Params", c.pascal_name())))
                .collect(),
            methods: commands
                .iter()
                .map(|c| ident(&field_name(&c.name)))
                .collect(),
            wire: commands.iter().map(|c| c.name.as_str()).collect(),
        }
    }

    fn command_enum(&self, ctx: &Ctx) -> TokenStream {
        let Paths {
            some,
            none_,
            ok,
            option,
            result,
            string,
            value,
            ..
        } = &ctx.p;
        let Self {
            variants,
            params,
            wire,
            ..
        } = self;
        let docs = self.commands.iter().map(|c| {
            Doc::new()
                .md(c.doc.as_deref())
                .para(Some(&format!("Wire `type`: `{}`.", c.name)))
        });
        let object = ctx.json_object();
        // An empty spec still compiles: the matches need an arm.
        let none = self
            .commands
            .is_empty()
            .then(|| quote!(_ => unreachable!(),));
        quote! {
            /// A command: the request's `type` with its parameters. The request `id` is kept in `Request`.
            #[derive(Debug, Clone, PartialEq)]
            pub enum Command { #(#docs #variants(#params),)* }

            impl Command {
                /// The wire `type` of this command.
                pub fn name(&self) -> &'static str {
                    match self { #(Self::#variants(_) => #wire,)* #none }
                }

                /// Builds a command from its wire `type` and the request's other keys (`id`/`type` may be present
                /// and are ignored). `Ok(None)` when `type` is not a command; `Err` names the offending field.
                pub fn from_wire(command_type: &str, fields: #object) -> #result<#option<Self>, #string> {
                    let fields = #value::Object(fields);
                    let command = match command_type {
                        #(#wire => Self::#variants(support::from_value(fields)?),)*
                        _ => return #ok(#none_),
                    };
                    #ok(#some(command))
                }

                /// Writes the request frame (`id` when given, `type`, then the parameters in spec order).
                pub fn serialize_with_id<S: ::serde::Serializer>(
                    &self,
                    id: #option<&#value>,
                    s: S,
                ) -> #result<S::Ok, S::Error> {
                    match self {
                        #(Self::#variants(p) => support::serialize_frame(s, id, #wire, p),)*
                        #none
                    }
                }
            }
        }
    }

    fn response_data(&self, ctx: &Ctx) -> TokenStream {
        let Paths {
            some,
            none_,
            ok,
            option,
            result,
            string,
            value,
            ..
        } = &ctx.p;
        let mut variants = Vec::new();
        let mut writes = Vec::new();
        let mut reads = Vec::new();
        for ((c, v), wire) in self.commands.iter().zip(&self.variants).zip(&self.wire) {
            match &c.result {
                CommandResult::None => {
                    let doc = format!(" `{wire}` succeeded; the response has no `data` key.");
                    variants.push(quote!(#[doc = #doc] #v));
                    writes.push(quote!(Self::#v => #ok(()),));
                    reads.push(quote! {
                        #wire => support::no_response_data(command, data).map(|()| Self::#v),
                    });
                }
                CommandResult::Data { ty, nullable } => {
                    let inner = ctx.rust_type(ty, false);
                    let (doc, ty) = if *nullable {
                        (
                            format!(" `{wire}` result; `None` is written as `data: null`."),
                            quote!(#option<#inner>),
                        )
                    } else {
                        (format!(" `{wire}` result."), inner)
                    };
                    variants.push(quote!(#[doc = #doc] #v(#ty)));
                    writes.push(quote!(Self::#v(d) => map.serialize_entry("data", d),));
                    reads.push(quote! {
                        #wire => support::response_data(command, data).map(Self::#v),
                    });
                }
            }
        }
        quote! {
            /// The `data` of a success response, typed by command.
            #[derive(Debug, Clone, PartialEq)]
            pub enum ResponseData {
                #(#variants,)*
                /// A success response for a command this version does not know (raw `data`, if any).
                Unknown(#option<#value>),
            }

            impl ResponseData {
                /// Writes the `data` entry, if this result has one.
                pub fn serialize_data<M: ::serde::ser::SerializeMap>(&self, map: &mut M) -> #result<(), M::Error> {
                    match self {
                        #(#writes)*
                        Self::Unknown(#some(d)) => map.serialize_entry("data", d),
                        Self::Unknown(#none_) => #ok(()),
                    }
                }

                /// Parses the `data` of a success response to `command` (`None` = the key is absent).
                pub fn from_wire(command: #option<&str>, data: #option<#value>) -> #result<Self, #string> {
                    let #some(command) = command else {
                        return #ok(Self::Unknown(data));
                    };
                    match command {
                        #(#reads)*
                        _ => #ok(Self::Unknown(data)),
                    }
                }
            }
        }
    }

    fn handler(&self, ctx: &Ctx) -> TokenStream {
        let Paths {
            option,
            result,
            string,
            ..
        } = &ctx.p;
        let (send, sync, future, request_context) = (
            ctx.path("Send"),
            ctx.path("Sync"),
            ctx.path("Future"),
            ctx.path("RequestContext"),
        );
        let methods = self
            .commands
            .iter()
            .zip(&self.methods)
            .zip(&self.params)
            .map(|((c, m), p)| {
                let mut doc = Doc::new().md(c.doc.as_deref());
                if !c.errors.is_empty() {
                    doc = doc.para(Some("Error texts:"));
                    for e in &c.errors {
                        let item = match &e.when {
                            Some(w) => format!("- `{}`: {}", e.text.trim(), w.trim()),
                            None => format!("- `{}`", e.text.trim()),
                        };
                        doc = doc.md(Some(&item));
                    }
                }
                let out = match &c.result {
                    CommandResult::None => quote!(()),
                    CommandResult::Data {
                        ty,
                        nullable: false,
                    } => ctx.rust_type(ty, false),
                    CommandResult::Data { ty, nullable: true } => {
                        let inner = ctx.rust_type(ty, false);
                        quote!(#option<#inner>)
                    }
                };
                quote! {
                    #doc
                    fn #m(&self, ctx: &#request_context, params: #p)
                        -> impl #future<Output = #result<#out, #string>> + #send;
                }
            });
        let calls = self
            .commands
            .iter()
            .zip(&self.variants)
            .zip(&self.methods)
            .map(|((c, v), m)| match c.result {
                CommandResult::None => {
                    quote!(Command::#v(p) => self.#m(ctx, p).await.map(|()| ResponseData::#v),)
                }
                CommandResult::Data { .. } => {
                    quote!(Command::#v(p) => self.#m(ctx, p).await.map(ResponseData::#v),)
                }
            });
        let none = self
            .commands
            .is_empty()
            .then(|| quote!(_ => { let _ = ctx; unreachable!() }));
        quote! {
            /// One async method per command. Implement it and pass it to `dispatch`: every method returns the
            /// command's result or an error text, written as `success: false` with exactly that text.
            ///
            /// Methods are `fn ... -> impl Future + Send` (native async in traits, generic dispatch); implement
            /// them with `async fn`. See `docs/adr/0001-rust-codegen-shape.md`.
            pub trait RpcHandler: #send + #sync {
                #(#methods)*
            }

            /// The lower-level service `dispatch` drives: one call per decoded command. Every [`RpcHandler`] is
            /// one; implement it directly to serve commands generically (proxies, recorders, replaying test
            /// doubles).
            pub trait CommandService: #send + #sync {
                /// Runs one command.
                fn call(&self, ctx: &#request_context, command: Command)
                    -> impl #future<Output = #result<ResponseData, #string>> + #send;
            }

            impl<H: RpcHandler> CommandService for H {
                async fn call(&self, ctx: &#request_context, command: Command) -> #result<ResponseData, #string> {
                    match command {
                        #(#calls)*
                        #none
                    }
                }
            }
        }
    }
}
