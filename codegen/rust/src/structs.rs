//! Structs (`kind: struct`, command params, inline event/input fields): plain serde derives, the field attributes
//! carry the wire rules (optional → absent, nullable → `null`, both → `Tristate`, `const` → a marker type).

use dreb_codegen_core::ir::Field;
use proc_macro2::TokenStream;
use quote::quote;
use serde_json::Value;

use crate::context::{Ctx, Paths};
use crate::docs::Doc;
use crate::names::{dedupe, field_name, ident, variant_name};

/// What is emitted for one struct.
pub struct StructSpec<'s> {
    pub name: &'s str,
    pub doc: Doc,
    pub fields: &'s [Field],
    /// `additionalFields: true`: unknown keys are kept in `other_fields`.
    pub additional: bool,
    /// A shared type (`types:`), whose directly recursive fields are boxed.
    pub shared: bool,
}

/// The struct and its field attributes; `const` fields register their marker types in `ctx`.
pub fn struct_def(ctx: &Ctx, s: &StructSpec) -> TokenStream {
    let doc = &s.doc;
    let name = ident(s.name);
    let mut names: Vec<String> = s.fields.iter().map(|f| field_name(&f.name)).collect();
    if s.additional {
        names.push("other_fields".into());
    }
    let names = dedupe(names, &[]);
    let mut fields: Vec<TokenStream> = s
        .fields
        .iter()
        .zip(&names)
        .map(|(f, n)| field(ctx, s, f, n))
        .collect();
    if s.additional {
        let other = ident(names.last().expect("other_fields is named"));
        let object = ctx.json_object();
        fields.push(quote! {
            /// Keys not described by the spec (this is an open object); kept in order and written back.
            #[serde(flatten)]
            pub #other: #object
        });
    }
    quote! {
        #doc
        #[derive(Debug, Clone, PartialEq, ::serde::Serialize, ::serde::Deserialize)]
        pub struct #name { #(#fields),* }
    }
}

fn field(ctx: &Ctx, s: &StructSpec, f: &Field, name: &str) -> TokenStream {
    let mut doc = Doc::with_notes(f.doc.as_deref(), f.since.as_deref(), f.note.as_deref());
    if f.raw {
        let text = format!(
            "Raw JSON (`raw: true`): the handler validates it as `{}`.",
            f.ty
        );
        doc = doc.para(Some(&text));
    }
    let mut attrs: Vec<TokenStream> = Vec::new();
    if name.trim_start_matches("r#") != f.name {
        let wire = &f.name;
        attrs.push(quote!(rename = #wire));
    }
    let is_none = ctx.path_str("Option", "is_none");
    let skip_none = quote!(default, skip_serializing_if = #is_none);
    let inner = ctx.rust_type(&f.ty, s.shared && ctx.needs_box(s.name, &f.ty));
    let Paths { option, value, .. } = &ctx.p;
    let ty = if f.raw {
        // Validated by the handler, not by decoding: any JSON, absent → None.
        attrs.push(skip_none);
        quote!(#option<#value>)
    } else if let Some(Value::String(literal)) = &f.constant {
        let marker = format!("{}{}", s.name, variant_name(&f.name));
        ctx.add_const(&marker, literal);
        let marker = ident(&marker);
        quote!(consts::#marker)
    } else if f.is_tristate() {
        let is_absent = ctx.path_str("Tristate", "is_absent");
        attrs.push(quote!(default, skip_serializing_if = #is_absent));
        let tristate = ctx.path("Tristate");
        quote!(#tristate<#inner>)
    } else if f.optional {
        attrs.push(skip_none);
        quote!(#option<#inner>)
    } else if f.nullable {
        // Present-but-null is required: a missing key is an error, unlike serde's default for Option.
        attrs.push(quote!(deserialize_with = "support::required_nullable"));
        quote!(#option<#inner>)
    } else {
        inner
    };
    let serde = (!attrs.is_empty()).then(|| quote!(#[serde(#(#attrs),*)]));
    let name = ident(name);
    quote! { #doc #serde pub #name: #ty }
}
