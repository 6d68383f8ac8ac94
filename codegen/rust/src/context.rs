//! What every emitter shares: the IR, type expressions as Rust types, recursion boxing, and the `const` marker
//! types collected while structs are emitted.

use std::cell::RefCell;
use std::collections::HashSet;

use dreb_codegen_core::ir::{Ir, Message, MessageBody, TypeKind, TypeRef};
use proc_macro2::TokenStream;
use quote::quote;

use crate::names::ident;
use crate::selection::Selection;

/// Which part of the output a module is.
#[derive(Clone, Copy)]
pub enum Part<'s> {
    /// The whole protocol module: every shared type, commands, events, dispatch.
    Whole,
    /// Only the selected shared types (the data-model crate: no RPC in it).
    Types(&'s Selection),
    /// The protocol module without the selected types, which it re-exports from the crate at `from`
    /// (e.g. `::dreb_types`).
    Protocol { types: &'s Selection, from: &'s str },
}

/// Imports only the RPC side needs; a [`Part::Types`] module leaves them out (its support module has no RPC).
const RPC_IMPORTS: &[&str] = &["RequestContext", "Future"];

/// Short names the generated module imports at its top (`use ::serde_json::Value;` ...), with their full paths.
/// A name that a spec type also uses is written in full instead, so spec types never clash with them.
pub const IMPORTS: &[(&str, &str)] = &[
    ("Value", "::serde_json::Value"),
    ("Map", "::serde_json::Map"),
    ("IndexMap", "::indexmap::IndexMap"),
    ("support", "crate::support"),
    ("JsNumber", "crate::support::JsNumber"),
    ("Tristate", "crate::support::Tristate"),
    ("RequestContext", "crate::support::RequestContext"),
    ("Future", "::std::future::Future"),
];

/// Names of the std prelude the module writes bare; a spec type of the same name makes them fully qualified.
const PRELUDE: &[(&str, &str)] = &[
    ("String", "::std::string::String"),
    ("Vec", "::std::vec::Vec"),
    ("Option", "::std::option::Option"),
    ("Result", "::std::result::Result"),
    ("Box", "::std::boxed::Box"),
    ("Send", "::std::marker::Send"),
    ("Sync", "::std::marker::Sync"),
    ("From", "::std::convert::From"),
    ("Some", "::std::option::Option::Some"),
    ("None", "::std::option::Option::None"),
    ("Ok", "::std::result::Result::Ok"),
    ("Err", "::std::result::Result::Err"),
];

/// The paths the emitters write most, as the module spells them (see [`Ctx::path`]).
pub struct Paths {
    pub option: TokenStream,
    pub result: TokenStream,
    pub string: TokenStream,
    pub value: TokenStream,
    pub some: TokenStream,
    pub none_: TokenStream,
    pub ok: TokenStream,
    pub err: TokenStream,
}

/// The generator's state for one IR.
pub struct Ctx<'a> {
    pub ir: &'a Ir,
    /// The part being emitted.
    pub part: Part<'a>,
    /// Spec type names (they shadow imports and prelude names).
    taken: HashSet<&'a str>,
    /// Frequent paths.
    pub p: Paths,
    /// `(marker type, literal)` of every string `const` field, in first-use order, for the `consts` module.
    consts: RefCell<Vec<(String, String)>>,
}

impl<'a> Ctx<'a> {
    pub fn new(ir: &'a Ir) -> Self {
        Self::for_part(ir, Part::Whole)
    }

    /// The state for one part of the output.
    pub fn for_part(ir: &'a Ir, part: Part<'a>) -> Self {
        let mut ctx = Ctx {
            ir,
            part,
            taken: ir.types.iter().map(|t| t.name.as_str()).collect(),
            p: Paths {
                option: TokenStream::new(),
                result: TokenStream::new(),
                string: TokenStream::new(),
                value: TokenStream::new(),
                some: TokenStream::new(),
                none_: TokenStream::new(),
                ok: TokenStream::new(),
                err: TokenStream::new(),
            },
            consts: RefCell::new(Vec::new()),
        };
        ctx.p = Paths {
            option: ctx.path("Option"),
            result: ctx.path("Result"),
            string: ctx.path("String"),
            value: ctx.path("Value"),
            some: ctx.path("Some"),
            none_: ctx.path("None"),
            ok: ctx.path("Ok"),
            err: ctx.path("Err"),
        };
        ctx
    }

    /// A path to a well-known item: its short name unless a spec type takes it.
    pub fn path(&self, short: &str) -> TokenStream {
        let full = IMPORTS
            .iter()
            .chain(PRELUDE)
            .find(|(s, _)| *s == short)
            .map(|(_, f)| *f)
            .unwrap_or_else(|| panic!("{short} is not a known import"));
        let text = if self.taken.contains(short) {
            full
        } else {
            short
        };
        text.parse().expect("a path parses")
    }

    /// A path as a string for serde attributes (`"Option::is_none"`): `item` of `short`, short unless taken.
    pub fn path_str(&self, short: &str, item: &str) -> String {
        format!("{}::{item}", self.path(short).to_string().replace(' ', ""))
    }

    /// The `use` items of the module's top: every import no spec type shadows.
    pub fn imports(&self) -> TokenStream {
        IMPORTS
            .iter()
            .filter(|(short, _)| !self.taken.contains(short))
            .filter(|(short, _)| {
                !matches!(self.part, Part::Types(_)) || !RPC_IMPORTS.contains(short)
            })
            .map(|(_, full)| {
                let path: TokenStream = full.parse().expect("a path parses");
                quote!(#[allow(unused_imports)] use #path;)
            })
            .collect()
    }

    /// Whether this module defines the shared type `name` (rather than re-exporting or omitting it).
    pub fn defines(&self, name: &str) -> bool {
        match self.part {
            Part::Whole => true,
            Part::Types(sel) => sel.contains(name),
            Part::Protocol { types, .. } => !types.contains(name),
        }
    }

    /// `Map<String, Value>`: a JSON object.
    pub fn json_object(&self) -> TokenStream {
        let (map, string, value) = (self.path("Map"), self.path("String"), self.path("Value"));
        quote!(#map<#string, #value>)
    }

    /// The Rust type of a type expression (`boxed`: inside a `Box`, for recursive fields).
    pub fn rust_type(&self, ty: &TypeRef, boxed: bool) -> TokenStream {
        let t = match ty {
            TypeRef::String => self.path("String"),
            TypeRef::Bool => quote!(bool),
            TypeRef::Int => quote!(i64),
            TypeRef::Number => self.path("JsNumber"),
            TypeRef::Json => self.path("Value"),
            TypeRef::Object => self.json_object(),
            TypeRef::List(t) => {
                let (vec, inner) = (self.path("Vec"), self.rust_type(t, false));
                quote!(#vec<#inner>)
            }
            TypeRef::Map(t) => {
                let (map, string) = (self.path("IndexMap"), self.path("String"));
                let inner = self.rust_type(t, false);
                quote!(#map<#string, #inner>)
            }
            TypeRef::Named(n) => {
                let n = ident(n);
                quote!(#n)
            }
        };
        if boxed {
            let b = self.path("Box");
            quote!(#b<#t>)
        } else {
            t
        }
    }

    /// `true` when a field of type `ty` inside `owner` would make `owner` infinitely sized (reaches `owner` again
    /// without passing through a list or map), so the field must be boxed.
    pub fn needs_box(&self, owner: &str, ty: &TypeRef) -> bool {
        self.reaches(ty, owner, &mut HashSet::new())
    }

    fn reaches(&self, ty: &TypeRef, target: &str, seen: &mut HashSet<String>) -> bool {
        let TypeRef::Named(n) = ty else { return false };
        if n == target {
            return true;
        }
        if !seen.insert(n.clone()) {
            return false;
        }
        match self.ir.type_def(n).map(|t| &t.kind) {
            Some(TypeKind::Struct(s)) => s.fields.iter().any(|f| self.reaches(&f.ty, target, seen)),
            Some(TypeKind::Union(u)) => u
                .variants
                .iter()
                .any(|v| self.reaches(&TypeRef::Named(v.type_name.clone()), target, seen)),
            Some(TypeKind::OneOf(o)) => o.variants.iter().any(|v| self.reaches(v, target, seen)),
            Some(TypeKind::Alias(a)) => self.reaches(a, target, seen),
            _ => false,
        }
    }

    /// The payload type name of an event or input: `<Name><suffix>` for inline fields, else the body type.
    pub fn payload_type(&self, m: &Message, suffix: &str) -> String {
        match &m.body {
            MessageBody::Fields(_) => format!("{}{suffix}", m.pascal_name()),
            MessageBody::Type(t) => t.clone(),
        }
    }

    /// Records the marker type of a `const` field (first use wins).
    pub fn add_const(&self, marker: &str, literal: &str) {
        let mut consts = self.consts.borrow_mut();
        if !consts.iter().any(|(m, _)| m == marker) {
            consts.push((marker.to_string(), literal.to_string()));
        }
    }

    /// Every recorded `const` marker.
    pub fn consts(&self) -> Vec<(String, String)> {
        self.consts.borrow().clone()
    }
}
