//! Enums of variant payloads: tagged unions (`kind: union`, and the `Event` enum, which is an open union tagged by
//! `type`) and untagged `oneOf`s.
//!
//! A tagged union's variants write their own tag, so serialising is `#[serde(untagged)]`; parsing goes through
//! `support::TaggedUnion` (a table from tag to variant, from a parsed value and straight from the input) and
//! `support::tagged_deserialize!`, which reads the tag first.

use std::collections::HashMap;

use dreb_codegen_core::ir::{OneOfDef, TypeDef, TypeRef, UnionDef};
use proc_macro2::TokenStream;
use quote::quote;

use crate::context::{Ctx, Paths};
use crate::docs::Doc;
use crate::names::{dedupe, ident, variant_name};

/// One variant of a tagged enum.
pub struct TaggedVariant {
    /// The tag value on the wire.
    pub tag: String,
    /// The payload type's name (the `From` impl converts from it).
    pub payload: String,
    /// The payload is boxed (a recursive variant).
    pub boxed: bool,
    pub doc: Doc,
}

/// A tagged enum: a union type or `Event`.
pub struct TaggedEnum {
    pub name: String,
    pub doc: Doc,
    /// The tag key.
    pub tag: String,
    pub variants: Vec<TaggedVariant>,
    /// `Some((name, doc))`: open, an unknown tag is kept as raw JSON in that variant.
    pub unknown: Option<(String, Doc)>,
}

impl TaggedEnum {
    /// Variant names: PascalCase tags, made unique, never the catch-all's.
    pub fn variant_names(&self) -> Vec<String> {
        let reserved: Vec<&str> = self.unknown.iter().map(|(n, _)| n.as_str()).collect();
        dedupe(
            self.variants.iter().map(|v| variant_name(&v.tag)).collect(),
            &reserved,
        )
    }

    /// The enum declaration (`serialize` derived as untagged when `derive_serialize`).
    pub fn declaration(&self, ctx: &Ctx, derive_serialize: bool) -> TokenStream {
        let name = ident(&self.name);
        let doc = &self.doc;
        let variants = self
            .variant_names()
            .into_iter()
            .zip(&self.variants)
            .map(|(n, v)| {
                let (n, doc) = (ident(&n), &v.doc);
                let ty = ctx.rust_type(&TypeRef::Named(v.payload.clone()), v.boxed);
                quote!(#doc #n(#ty))
            });
        let value = &ctx.p.value;
        let unknown = self.unknown.iter().map(|(n, doc)| {
            let n = ident(n);
            quote!(#doc #n(#value))
        });
        let derive = if derive_serialize {
            quote!(#[derive(Debug, Clone, PartialEq, ::serde::Serialize)] #[serde(untagged)])
        } else {
            quote!(#[derive(Debug, Clone, PartialEq)])
        };
        quote! {
            #doc
            #derive
            pub enum #name { #(#variants,)* #(#unknown,)* }
        }
    }

    /// `impl TaggedUnion` (tag → variant, from a value and from the input) and `Deserialize` through it.
    pub fn parsing(&self, ctx: &Ctx) -> TokenStream {
        let Paths {
            some,
            ok,
            err,
            value,
            string,
            result,
            option,
            ..
        } = &ctx.p;
        let name = ident(&self.name);
        let (tag, type_name) = (&self.tag, &self.name);
        let tags: Vec<&str> = self.variants.iter().map(|v| v.tag.as_str()).collect();
        let variants: Vec<_> = self.variant_names().iter().map(|n| ident(n)).collect();
        let unknown = self.unknown.as_ref().map(|(n, _)| {
            let n = ident(n);
            quote! {
                fn unknown(v: #value) -> #option<Self> {
                    #some(Self::#n(v))
                }
            }
        });
        quote! {
            impl support::TaggedUnion for #name {
                const TAG: &'static str = #tag;
                const NAME: &'static str = #type_name;
                const KNOWN: &'static [&'static str] = &[#(#tags),*];

                fn parse_variant(tag: &str, v: #value) -> #result<#result<Self, #string>, #value> {
                    match tag {
                        #(#tags => #ok(support::from_value(v).map(Self::#variants)),)*
                        _ => #err(v),
                    }
                }

                fn deserialize_variant<'de, D: ::serde::Deserializer<'de>>(
                    tag: &str,
                    d: D,
                ) -> #result<Self, D::Error> {
                    match tag {
                        #(#tags => ::serde::Deserialize::deserialize(d).map(Self::#variants),)*
                        _ => #err(<D::Error as ::serde::de::Error>::unknown_variant(tag, Self::KNOWN)),
                    }
                }

                #unknown
            }

            support::tagged_deserialize!(#name);
        }
    }

    /// `From` each variant payload, unless a payload type appears twice (the impls would conflict).
    pub fn conversions(&self) -> TokenStream {
        let name = ident(&self.name);
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for v in &self.variants {
            *counts.entry(v.payload.as_str()).or_default() += 1;
        }
        self.variant_names()
            .iter()
            .zip(&self.variants)
            .filter(|(_, v)| counts[v.payload.as_str()] == 1)
            .map(|(n, v)| {
                let (n, payload) = (ident(n), ident(&v.payload));
                quote!(support::impl_from!(#name::#n(#payload));)
            })
            .collect()
    }
}

/// A `kind: union` type: declaration, `TAGS`, parsing and conversions.
pub fn union_def(ctx: &Ctx, t: &TypeDef, u: &UnionDef, doc: Doc) -> TokenStream {
    let catch_all = if u
        .variants
        .iter()
        .any(|v| variant_name(&v.tag_value) == "Unknown")
    {
        "UnknownTag"
    } else {
        "Unknown"
    };
    let mut doc = doc.para(Some(&format!(
        "Tagged by `{}`; each variant struct carries the tag itself.",
        u.tag
    )));
    if u.open {
        doc = doc.md(Some(&format!(
            "Open: an unknown `{}` is kept as raw JSON in [`Self::{catch_all}`].",
            u.tag
        )));
    }
    let e = TaggedEnum {
        name: t.name.clone(),
        doc,
        tag: u.tag.clone(),
        variants: u
            .variants
            .iter()
            .map(|v| TaggedVariant {
                tag: v.tag_value.clone(),
                payload: v.type_name.clone(),
                boxed: ctx.needs_box(&t.name, &TypeRef::Named(v.type_name.clone())),
                doc: Doc::of(format!("`{}: \"{}\"`", u.tag, v.tag_value)),
            })
            .collect(),
        unknown: u.open.then(|| {
            (
                catch_all.to_string(),
                Doc::of("A variant this version does not know, kept as sent."),
            )
        }),
    };
    let name = ident(&t.name);
    let tag_doc = format!(" Every known `{}` value, in spec order.", u.tag);
    let declaration = e.declaration(ctx, true);
    let parsing = e.parsing(ctx);
    let conversions = e.conversions();
    quote! {
        #declaration

        impl #name {
            #[doc = #tag_doc]
            pub const TAGS: &'static [&'static str] = <Self as support::TaggedUnion>::KNOWN;
        }

        #parsing
        #conversions
    }
}

/// A `kind: oneOf` type: an untagged serde enum, tried in order. Variant names are the spec's when it names them
/// (`variants:` as a map), else derived from the types. A string-or-list oneOf is parsed by the first JSON token
/// (`support::string_or_list`): serde's untagged parsing would copy the value into a buffer and try each variant.
pub fn one_of_def(ctx: &Ctx, t: &TypeDef, o: &OneOfDef, doc: Doc) -> TokenStream {
    let name = ident(&t.name);
    let names = match &o.names {
        Some(names) => names.clone(),
        None => dedupe(
            o.variants
                .iter()
                .map(|v| match v {
                    TypeRef::Named(n) => n.clone(),
                    other => variant_name(&other.to_spec().replace(['<', '>'], "_")),
                })
                .collect(),
            &[],
        ),
    };
    let string_or_list = match o.variants.as_slice() {
        [TypeRef::String, TypeRef::List(_)] => Some((0, 1)),
        [TypeRef::List(_), TypeRef::String] => Some((1, 0)),
        _ => None,
    };
    let doc = if string_or_list.is_some() {
        doc.para(Some(
            "Untagged: a JSON string is the string variant, an array the list variant.",
        ))
    } else {
        doc.para(Some("Untagged: the variants are tried in order."))
    };
    let variants = o.variants.iter().zip(&names).map(|(v, n)| {
        let vdoc = Doc::of(format!("`{v}`"));
        let ty = ctx.rust_type(v, ctx.needs_box(&t.name, v));
        let n = ident(n);
        quote!(#vdoc #n(#ty))
    });
    let Some((s, l)) = string_or_list else {
        return quote! {
            #doc
            #[derive(Debug, Clone, PartialEq, ::serde::Serialize, ::serde::Deserialize)]
            #[serde(untagged)]
            pub enum #name { #(#variants),* }
        };
    };
    let (string, list) = (ident(&names[s]), ident(&names[l]));
    let result = &ctx.p.result;
    let type_name = &t.name;
    quote! {
        #doc
        #[derive(Debug, Clone, PartialEq, ::serde::Serialize)]
        #[serde(untagged)]
        pub enum #name { #(#variants),* }

        impl<'de> ::serde::Deserialize<'de> for #name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> #result<Self, D::Error> {
                support::string_or_list(d, #type_name, Self::#string, Self::#list)
            }
        }
    }
}
