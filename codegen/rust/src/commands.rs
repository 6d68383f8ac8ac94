//! Requests, in either direction: commands (the peer sends them, the runtime answers) and calls (the runtime sends
//! them, the peer answers). Each set gets `<Name>Params` structs, a request enum (`Command` / `Call`), the enum of
//! success `data` (`ResponseData` / `CallResult`) and, in a spec with calls, a trait typing each params struct
//! with its result (`CommandSpec` / `CallSpec`). Commands also get the `RpcHandler` trait ([`crate::handler`]).
//! A spec without calls emits nothing for them, and no `CommandSpec`.

use dreb_codegen_core::ir::{Command, CommandResult};
use proc_macro2::{Ident, TokenStream};
use quote::quote;

use crate::context::{Ctx, Paths};
use crate::docs::Doc;
use crate::names::{dedupe, field_name, ident, variant_name};
use crate::structs::{StructSpec, struct_def};

/// Which set of requests.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// `commands:`: sent by the peer, answered by the runtime.
    Commands,
    /// `calls:`: sent by the runtime, answered by the peer.
    Calls,
}

impl Direction {
    fn requests<'a>(self, ctx: &Ctx<'a>) -> &'a [Command] {
        match self {
            Direction::Commands => &ctx.ir.commands,
            Direction::Calls => &ctx.ir.calls,
        }
    }

    /// What one request is called in docs.
    fn noun(self) -> &'static str {
        match self {
            Direction::Commands => "command",
            Direction::Calls => "call",
        }
    }

    /// The request enum.
    pub fn enum_name(self) -> &'static str {
        match self {
            Direction::Commands => "Command",
            Direction::Calls => "Call",
        }
    }

    /// The enum of success `data`.
    pub fn data_name(self) -> &'static str {
        match self {
            Direction::Commands => "ResponseData",
            Direction::Calls => "CallResult",
        }
    }

    /// The trait typing a params struct with its result.
    fn spec_trait(self) -> &'static str {
        match self {
            Direction::Commands => "CommandSpec",
            Direction::Calls => "CallSpec",
        }
    }
}

/// Everything about commands, in module order (the `CommandSpec` trait only when the spec also has calls).
pub fn commands(ctx: &Ctx) -> TokenStream {
    let list = RequestList::new(ctx, Direction::Commands);
    let params = list.params_structs(ctx);
    let command = list.request_enum(ctx);
    let response = list.response_data(ctx);
    let spec = (!ctx.ir.calls.is_empty()).then(|| list.spec_trait(ctx));
    let handler = crate::handler::handler(ctx, &list);
    quote!(#params #command #response #spec #handler)
}

/// Everything about calls, in module order; nothing when the spec has none.
pub fn calls(ctx: &Ctx) -> TokenStream {
    if ctx.ir.calls.is_empty() {
        return TokenStream::new();
    }
    let list = RequestList::new(ctx, Direction::Calls);
    let params = list.params_structs(ctx);
    let call = list.request_enum(ctx);
    let result = list.response_data(ctx);
    let spec = list.spec_trait(ctx);
    quote!(#params #call #result #spec)
}

/// The requests of one direction with their variant and method names.
pub struct RequestList<'a> {
    pub direction: Direction,
    pub requests: &'a [Command],
    /// Request enum / data enum variants.
    pub variants: Vec<Ident>,
    /// `<Name>Params` types.
    pub params: Vec<Ident>,
    /// Handler methods (`RpcHandler`).
    pub methods: Vec<Ident>,
    /// Wire names.
    pub wire: Vec<&'a str>,
}

impl<'a> RequestList<'a> {
    pub fn new(ctx: &Ctx<'a>, direction: Direction) -> Self {
        let requests = direction.requests(ctx);
        let variants = dedupe(
            requests.iter().map(|c| variant_name(&c.name)).collect(),
            &["Unknown"],
        );
        RequestList {
            direction,
            requests,
            variants: variants.iter().map(|n| ident(n)).collect(),
            params: requests
                .iter()
                .map(|c| ident(&format!("{}Params", c.pascal_name())))
                .collect(),
            methods: requests
                .iter()
                .map(|c| ident(&field_name(&c.name)))
                .collect(),
            wire: requests.iter().map(|c| c.name.as_str()).collect(),
        }
    }

    /// The type a successful request resolves to: the result type, `()` for `result: none`, `Option<T>` when
    /// nullable.
    pub fn output_type(ctx: &Ctx, result: &CommandResult) -> TokenStream {
        match result {
            CommandResult::None => quote!(()),
            CommandResult::Data {
                ty,
                nullable: false,
            } => ctx.rust_type(ty, false),
            CommandResult::Data { ty, nullable: true } => {
                let option = &ctx.p.option;
                let inner = ctx.rust_type(ty, false);
                quote!(#option<#inner>)
            }
        }
    }

    fn params_structs(&self, ctx: &Ctx) -> TokenStream {
        self.requests
            .iter()
            .map(|c| {
                struct_def(
                    ctx,
                    &StructSpec {
                        name: &format!("{}Params", c.pascal_name()),
                        doc: Doc::of(format!(
                            "Parameters of the `{}` {} (the request's fields besides `id` and `type`).",
                            c.name,
                            self.direction.noun()
                        )),
                        fields: &c.params,
                        additional: false,
                        shared: false,
                    },
                )
            })
            .collect()
    }

    fn request_enum(&self, ctx: &Ctx) -> TokenStream {
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
        let docs = self.requests.iter().map(|c| {
            Doc::new()
                .md(c.doc.as_deref())
                .para(Some(&format!("Wire `type`: `{}`.", c.name)))
        });
        let object = ctx.json_object();
        // An empty spec still compiles: the matches need an arm.
        let none = self
            .requests
            .is_empty()
            .then(|| quote!(_ => unreachable!(),));
        let name = ident(self.direction.enum_name());
        let (doc, type_param, from_wire_doc, local) = match self.direction {
            Direction::Commands => (
                "A command: the request's `type` with its parameters. The request `id` is kept in `Request`.",
                ident("command_type"),
                "Builds a command from its wire `type` and the request's other keys (`id`/`type` may be present\n \
                 and are ignored). `Ok(None)` when `type` is not a command; `Err` names the offending field.",
                ident("command"),
            ),
            Direction::Calls => (
                "A call: a request the runtime sends to the peer, the request's `type` with its parameters.",
                ident("call_type"),
                "Builds a call from its wire `type` and the request's other keys (`id`/`type` may be present\n \
                 and are ignored). `Ok(None)` when `type` is not a call; `Err` names the offending field.",
                ident("call"),
            ),
        };
        let doc = format!(" {doc}");
        let name_doc = format!(" The wire `type` of this {}.", self.direction.noun());
        let from_wire_doc: Vec<String> = from_wire_doc
            .split("\n")
            .map(|l| format!(" {}", l.trim()))
            .collect();
        quote! {
            #[doc = #doc]
            #[derive(Debug, Clone, PartialEq)]
            pub enum #name { #(#docs #variants(#params),)* }

            impl #name {
                #[doc = #name_doc]
                pub fn name(&self) -> &'static str {
                    match self { #(Self::#variants(_) => #wire,)* #none }
                }

                #(#[doc = #from_wire_doc])*
                pub fn from_wire(#type_param: &str, fields: #object) -> #result<#option<Self>, #string> {
                    let fields = #value::Object(fields);
                    let #local = match #type_param {
                        #(#wire => Self::#variants(support::from_value(fields)?),)*
                        _ => return #ok(#none_),
                    };
                    #ok(#some(#local))
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
        let local = ident(self.direction.noun());
        for ((c, v), wire) in self.requests.iter().zip(&self.variants).zip(&self.wire) {
            match &c.result {
                CommandResult::None => {
                    let doc = format!(" `{wire}` succeeded; the response has no `data` key.");
                    variants.push(quote!(#[doc = #doc] #v));
                    writes.push(quote!(Self::#v => #ok(()),));
                    reads.push(quote! {
                        #wire => support::no_response_data(#local, data).map(|()| Self::#v),
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
                        #wire => support::response_data(#local, data).map(Self::#v),
                    });
                }
            }
        }
        let name = ident(self.direction.data_name());
        let noun = self.direction.noun();
        let doc = format!(" The `data` of a success response, typed by {noun}.");
        let unknown_doc = format!(
            " A success response for a {noun} this version does not know (raw `data`, if any)."
        );
        let from_wire_doc = format!(
            " Parses the `data` of a success response to `{noun}` (`None` = the key is absent)."
        );
        quote! {
            #[doc = #doc]
            #[derive(Debug, Clone, PartialEq)]
            pub enum #name {
                #(#variants,)*
                #[doc = #unknown_doc]
                Unknown(#option<#value>),
            }

            impl #name {
                /// Writes the `data` entry, if this result has one.
                pub fn serialize_data<M: ::serde::ser::SerializeMap>(&self, map: &mut M) -> #result<(), M::Error> {
                    match self {
                        #(#writes)*
                        Self::Unknown(#some(d)) => map.serialize_entry("data", d),
                        Self::Unknown(#none_) => #ok(()),
                    }
                }

                #[doc = #from_wire_doc]
                pub fn from_wire(#local: #option<&str>, data: #option<#value>) -> #result<Self, #string> {
                    let #some(#local) = #local else {
                        return #ok(Self::Unknown(data));
                    };
                    match #local {
                        #(#reads)*
                        _ => #ok(Self::Unknown(data)),
                    }
                }
            }
        }
    }

    /// `CommandSpec` / `CallSpec`: the trait and one impl per params struct.
    fn spec_trait(&self, ctx: &Ctx) -> TokenStream {
        let send = ctx.path("Send");
        let (trait_name, enum_name) = (
            ident(self.direction.spec_trait()),
            ident(self.direction.enum_name()),
        );
        let (doc, into, into_doc) = match self.direction {
            Direction::Commands => (
                "A command's parameters, typed with the command's result: a peer's `send(params)` returns \
                 `Self::Output`.",
                ident("into_command"),
                "The command carrying these parameters.",
            ),
            Direction::Calls => (
                "A call's parameters, typed with the call's result: `runtime.call(params)` returns `Self::Output`.",
                ident("into_call"),
                "The call carrying these parameters.",
            ),
        };
        let (doc, into_doc) = (format!(" {doc}"), format!(" {into_doc}"));
        let impls = self
            .requests
            .iter()
            .zip(&self.params)
            .zip(&self.variants)
            .map(|((c, p), v)| {
                let (wire, out) = (&c.name, Self::output_type(ctx, &c.result));
                quote! {
                    impl #trait_name for #p {
                        const NAME: &'static str = #wire;
                        type Output = #out;
                        fn #into(self) -> #enum_name {
                            #enum_name::#v(self)
                        }
                    }
                }
            });
        quote! {
            #[doc = #doc]
            pub trait #trait_name: ::serde::Serialize + #send + 'static {
                /// The wire `type`.
                const NAME: &'static str;
                /// What a success response's `data` parses as: the result type, `()` for `result: none`,
                /// `Option<T>` when the result is nullable.
                type Output: ::serde::de::DeserializeOwned + #send + 'static;
                #[doc = #into_doc]
                fn #into(self) -> #enum_name;
            }

            #(#impls)*
        }
    }
}
