//! Structs (`kind: struct`, command params, inline event/input fields): plain serde derives, the field attributes
//! carry the wire rules (optional → absent, nullable → `null`, both → `Tristate`, `const` → a marker type).

use std::collections::HashSet;

use dreb_codegen_core::ir::{Field, TypeKind, TypeRef};
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
    let copy = (!s.additional && fields_are(ctx, s.fields, Trait::Copy, &mut HashSet::new()))
        .then(|| quote!(Copy,));
    let default =
        fields_are(ctx, s.fields, Trait::Default, &mut HashSet::new()).then(|| quote!(Default,));
    quote! {
        #doc
        #[derive(Debug, Clone, #copy #default PartialEq, ::serde::Serialize, ::serde::Deserialize)]
        pub struct #name { #(#fields),* }
    }
}

/// A derive a struct gets when every field's type has it.
#[derive(Clone, Copy, PartialEq)]
enum Trait {
    /// Every field is a number, bool, closed enum, const marker or `Copy` struct (or an `Option` of one).
    Copy,
    /// Every field has a default: scalars, strings, lists, maps, JSON, optional fields, const markers and
    /// structs whose fields all do. Enums and unions have none.
    Default,
}

fn fields_are(ctx: &Ctx, fields: &[Field], t: Trait, seen: &mut HashSet<String>) -> bool {
    fields.iter().all(|f| {
        if f.raw {
            return t == Trait::Default;
        }
        if matches!(f.constant, Some(Value::String(_))) {
            return true;
        }
        if f.is_tristate() {
            // `Tristate` is not `Copy`; it defaults to absent.
            return t == Trait::Default;
        }
        if (f.optional || f.nullable) && t == Trait::Default {
            return true;
        }
        type_is(ctx, &f.ty, t, seen)
    })
}

fn type_is(ctx: &Ctx, ty: &TypeRef, t: Trait, seen: &mut HashSet<String>) -> bool {
    match ty {
        TypeRef::Int | TypeRef::Bool | TypeRef::Number => true,
        TypeRef::String | TypeRef::Json | TypeRef::Object | TypeRef::List(_) | TypeRef::Map(_) => {
            t == Trait::Default
        }
        TypeRef::Named(n) => {
            // A recursive type is neither (it holds a `Box` or a list of itself).
            if !seen.insert(n.clone()) {
                return false;
            }
            let ok = match ctx.ir.type_def(n).map(|d| &d.kind) {
                Some(TypeKind::Struct(s)) => {
                    !(t == Trait::Copy && s.additional_fields)
                        && fields_are(ctx, &s.fields, t, seen)
                }
                Some(TypeKind::Enum(e)) => t == Trait::Copy && !e.open,
                Some(TypeKind::Alias(a)) => type_is(ctx, a, t, seen),
                _ => false,
            };
            seen.remove(n);
            ok
        }
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
