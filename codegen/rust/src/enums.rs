//! String enums (`kind: enum`): the variant tables (`VALUES`, `as_str`, `from_wire`; for a closed enum also `ALL`,
//! every variant in spec order, a `'static` `as_str`, and an order that is the spec order) are emitted, the serde and `Display` impls come from
//! `support::string_enum_serde!`. `open: true` adds `Other(String)`.

use dreb_codegen_core::ir::{EnumDef, TypeDef};
use proc_macro2::TokenStream;
use quote::quote;

use crate::context::{Ctx, Paths};
use crate::docs::Doc;
use crate::names::{dedupe, ident, variant_name};

pub fn enum_def(ctx: &Ctx, t: &TypeDef, e: &EnumDef, doc: Doc) -> TokenStream {
    let name = ident(&t.name);
    let names = dedupe(
        e.values.iter().map(|v| variant_name(&v.value)).collect(),
        &["Other"],
    );
    let variants: Vec<_> = names.iter().map(|n| ident(n)).collect();
    let wire: Vec<&str> = e.values.iter().map(|v| v.value.as_str()).collect();
    let docs = e.values.iter().map(|v| {
        Doc::new()
            .md(v.doc.as_deref())
            .md(Some(&format!("Wire value `{}`.", v.value)))
    });
    let Paths {
        option,
        string,
        some,
        none_,
        ..
    } = &ctx.p;
    let (doc, derive, other, other_str, other_wire, all, str_lifetime) = if e.open {
        (
            doc.para(Some(
                "Open: values not listed in the spec are kept in [`Self::Other`].",
            )),
            quote!(#[derive(Debug, Clone, PartialEq, Eq, Hash)]),
            quote! {
                /// A value the spec does not list, kept as sent.
                Other(#string),
            },
            quote!(Self::Other(s) => s,),
            quote!(other => #some(Self::Other(other.to_string())),),
            quote!(),
            quote!(&str),
        )
    } else {
        (
            doc,
            // Ordered by spec position (lowest effort first for thinking levels).
            quote!(#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]),
            quote!(),
            quote!(),
            quote!(_ => #none_,),
            quote! {
                /// Every variant, in spec order.
                pub const ALL: &'static [Self] = &[#(Self::#variants),*];
            },
            quote!(&'static str),
        )
    };
    quote! {
        #doc
        #derive
        pub enum #name { #(#docs #variants,)* #other }

        impl #name {
            /// Every listed wire value, in spec order.
            pub const VALUES: &'static [&'static str] = &[#(#wire),*];

            #all

            /// The wire value.
            pub fn as_str(&self) -> #str_lifetime {
                match self { #(Self::#variants => #wire,)* #other_str }
            }

            /// Parses a wire value; `None` for an unlisted value of a closed enum.
            pub fn from_wire(s: &str) -> #option<Self> {
                match s { #(#wire => #some(Self::#variants),)* #other_wire }
            }
        }

        support::string_enum_serde!(#name);
    }
}
