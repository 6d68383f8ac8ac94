//! Frames tagged by `type` that are not commands: events (stdout) and inputs (stdin messages without a
//! response). One emitter for both: each message gets a payload struct when its fields are inline
//! (`<Name>Event`, `<Name>Input`) and a variant of the set's enum.
//!
//! - `Event` is an open tagged union by `type` (see [`crate::unions::TaggedEnum`]): an unknown or missing `type`
//!   is kept in `Event::Unknown`. A variant whose payload does not declare `type` is written inside a frame.
//! - `Input` carries the raw frame (the receiver validates it with its own error texts); `Input::parse` gives
//!   the typed payload.

use dreb_codegen_core::ir::{Message, MessageBody};
use proc_macro2::TokenStream;
use quote::quote;

use crate::context::{Ctx, Paths};
use crate::docs::Doc;
use crate::names::{dedupe, ident, variant_name};
use crate::structs::{StructSpec, struct_def};
use crate::unions::{TaggedEnum, TaggedVariant};

/// Which set of messages.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Event,
    Input,
}

impl Role {
    /// The enum's name, which is also the payload structs' suffix.
    fn name(self) -> &'static str {
        match self {
            Role::Event => "Event",
            Role::Input => "Input",
        }
    }

    fn messages<'a>(self, ctx: &Ctx<'a>) -> &'a [Message] {
        match self {
            Role::Event => &ctx.ir.events,
            Role::Input => &ctx.ir.inputs,
        }
    }

    /// What the payload struct docs call one message.
    fn noun(self) -> &'static str {
        match self {
            Role::Event => "event",
            Role::Input => "input message",
        }
    }
}

/// The payload structs and the enum of one set.
pub fn messages(ctx: &Ctx, role: Role) -> TokenStream {
    let messages = role.messages(ctx);
    let payloads = messages.iter().filter_map(|m| match &m.body {
        MessageBody::Fields(fields) => Some(struct_def(
            ctx,
            &StructSpec {
                name: &ctx.payload_type(m, role.name()),
                doc: Doc::of(format!(
                    "Fields of the `{}` {} besides `type`.",
                    m.name,
                    role.noun()
                )),
                fields: fields.as_slice(),
                additional: false,
                shared: false,
            },
        )),
        MessageBody::Type(_) => None,
    });
    let payloads: TokenStream = payloads.collect();
    let enumeration = match role {
        Role::Event => event_enum(ctx, messages),
        Role::Input => input_enum(ctx, messages),
    };
    quote!(#payloads #enumeration)
}

/// A variant's doc: the message's doc, then its wire name.
fn variant_doc(m: &Message, tail: String) -> Doc {
    Doc::new().md(m.doc.as_deref()).para(Some(&tail))
}

fn event_enum(ctx: &Ctx, events: &[Message]) -> TokenStream {
    let Paths {
        some,
        none_,
        option,
        result,
        value,
        ..
    } = &ctx.p;
    let e = TaggedEnum {
        name: "Event".into(),
        doc: Doc::of(
            "A stdout frame that is not a response. **Open**: an unknown `type` is kept as raw JSON in\n\
             [`Event::Unknown`], never an error, so adding events stays compatible.",
        ),
        tag: "type".into(),
        variants: events
            .iter()
            .map(|m| TaggedVariant {
                tag: m.name.clone(),
                payload: ctx.payload_type(m, "Event"),
                boxed: false,
                doc: variant_doc(m, format!("Wire `type`: `{}`.", m.name)),
            })
            .collect(),
        unknown: Some((
            "Unknown".into(),
            Doc::of("An event this version does not know, kept as sent."),
        )),
    };
    let names: Vec<_> = e.variant_names().iter().map(|n| ident(n)).collect();
    let wire: Vec<&str> = events.iter().map(|m| m.name.as_str()).collect();
    let writes = events.iter().zip(&names).map(|(m, n)| {
        let wire = &m.name;
        match &m.body {
            MessageBody::Type(t) if ctx.ir.body_declares_type(t) => {
                quote!(Self::#n(v) => ::serde::Serialize::serialize(v, s),)
            }
            _ => quote!(Self::#n(v) => support::serialize_frame(s, #none_, #wire, v),),
        }
    });
    let declaration = e.declaration(ctx, false);
    let parsing = e.parsing(ctx);
    let conversions = e.conversions();
    quote! {
        #declaration

        impl Event {
            /// The wire `type` (`None` for an unknown frame without a string `type`).
            pub fn name(&self) -> #option<&str> {
                match self {
                    #(Self::#names(_) => #some(#wire),)*
                    Self::Unknown(v) => v.get("type").and_then(#value::as_str),
                }
            }
        }

        impl ::serde::Serialize for Event {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> #result<S::Ok, S::Error> {
                match self {
                    #(#writes)*
                    Self::Unknown(v) => ::serde::Serialize::serialize(v, s),
                }
            }
        }

        #parsing
        #conversions
    }
}

fn input_enum(ctx: &Ctx, inputs: &[Message]) -> TokenStream {
    let Paths {
        ok,
        err,
        result,
        string,
        value,
        ..
    } = &ctx.p;
    let names: Vec<_> = dedupe(inputs.iter().map(|m| variant_name(&m.name)).collect(), &[])
        .iter()
        .map(|n| ident(n))
        .collect();
    let wire: Vec<&str> = inputs.iter().map(|m| m.name.as_str()).collect();
    let docs = inputs.iter().map(|m| {
        let payload = ctx.payload_type(m, "Input");
        variant_doc(
            m,
            format!("Wire `type`: `{}`; typed form [`{payload}`].", m.name),
        )
    });
    let object = ctx.json_object();
    quote! {
        /// A stdin message that is not a command and never gets a response. Carries the raw frame so the
        /// receiver can apply its own validation (and report malformed answers); parse it with
        /// [`Input::parse`].
        #[derive(Debug, Clone, PartialEq)]
        pub enum Input { #(#docs #names(#object),)* }

        impl Input {
            /// Recognises an input message by its `type`; gives the frame back when it is not one.
            pub fn from_wire(message_type: &str, frame: #object) -> #result<Self, #object> {
                match message_type {
                    #(#wire => #ok(Self::#names(frame)),)*
                    _ => #err(frame),
                }
            }

            /// The wire `type`.
            pub fn name(&self) -> &'static str {
                match *self { #(Self::#names(_) => #wire,)* }
            }

            /// The raw frame, including `type`.
            pub fn frame(&self) -> &#object {
                match *self { #(Self::#names(ref f) => f,)* }
            }

            /// Parses the frame as its typed form (the error names the offending field).
            pub fn parse<T: ::serde::de::DeserializeOwned>(&self) -> #result<T, #string> {
                support::from_value(#value::Object(self.frame().clone()))
            }
        }
    }
}
