//! A selection of shared types: the spec's data types that one crate (`dreb-types`) defines and the protocol
//! module takes from it instead of generating them a second time. Given as root names; the selection is their
//! closure (every type a selected type refers to), in spec order, so the selected module always compiles alone.

use std::collections::BTreeSet;

use dreb_codegen_core::ir::{Ir, TypeKind, TypeRef};

/// A root name that is not a type of the spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownRoot(pub String);

impl std::fmt::Display for UnknownRoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}` is not a type of the spec (`types:`)", self.0)
    }
}

impl std::error::Error for UnknownRoot {}

/// Shared types chosen by their roots, closed under references, in spec order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    names: Vec<String>,
}

impl Selection {
    /// The closure of `roots`: the roots and every type they refer to, directly or through other types.
    pub fn closure(ir: &Ir, roots: &[&str]) -> Result<Self, UnknownRoot> {
        let mut chosen = BTreeSet::new();
        let mut todo: Vec<String> = Vec::new();
        for root in roots {
            if ir.type_def(root).is_none() {
                return Err(UnknownRoot(root.to_string()));
            }
            todo.push(root.to_string());
        }
        while let Some(name) = todo.pop() {
            if !chosen.insert(name.clone()) {
                continue;
            }
            let def = ir
                .type_def(&name)
                .expect("the loader resolved every named type");
            let mut refs = Vec::new();
            match &def.kind {
                TypeKind::Struct(s) => s.fields.iter().for_each(|f| named(&f.ty, &mut refs)),
                TypeKind::Union(u) => refs.extend(u.variants.iter().map(|v| v.type_name.clone())),
                TypeKind::OneOf(o) => o.variants.iter().for_each(|v| named(v, &mut refs)),
                TypeKind::Alias(a) => named(a, &mut refs),
                TypeKind::Enum(_) => {}
            }
            todo.extend(refs.into_iter().filter(|r| !chosen.contains(r)));
        }
        let names = ir
            .types
            .iter()
            .filter(|t| chosen.contains(&t.name))
            .map(|t| t.name.clone())
            .collect();
        Ok(Selection { names })
    }

    /// The selected names, in spec order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Whether `name` is selected.
    pub fn contains(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }
}

/// The type names a type expression mentions.
fn named(ty: &TypeRef, out: &mut Vec<String>) {
    match ty {
        TypeRef::Named(n) => out.push(n.clone()),
        TypeRef::List(t) | TypeRef::Map(t) => named(t, out),
        _ => {}
    }
}
