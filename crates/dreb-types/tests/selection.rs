//! Golden of the selection: the shared types `dreb-types` defines (the closure of `selection.rs`'s roots), one per
//! line in `tests/selection.txt`, so a type moving in or out of the data-model crate shows up in review. Update with
//! `UPDATE_GOLDENS=1 cargo test -p dreb-types --test selection`.
//!
//! Also checks that the selection is closed (every type a selected type refers to is selected) and in spec order.
//! That the spec's examples of these types round-trip is checked through `dreb-protocol`'s conformance helper,
//! which reaches them through its re-export.

use std::path::PathBuf;

#[test]
fn selection_matches_its_golden() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/selection.txt");
    let actual: String = dreb_types::TYPES.iter().map(|t| format!("{t}\n")).collect();
    if std::env::var_os("UPDATE_GOLDENS").is_some() {
        std::fs::write(&path, &actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        expected, actual,
        "the dreb-types selection changed; if intended, run `UPDATE_GOLDENS=1 cargo test -p dreb-types --test selection`"
    );
}

#[test]
fn selection_is_closed_and_in_spec_order() {
    let ir = dreb_codegen_core::load_spec(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../protocol/rpc.yaml"
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let positions: Vec<usize> = dreb_types::TYPES
        .iter()
        .map(|n| {
            ir.types
                .iter()
                .position(|t| t.name == *n)
                .unwrap_or_else(|| panic!("{n} is not a spec type"))
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "spec order");
    for name in dreb_types::TYPES {
        let def = ir.type_def(name).unwrap();
        let mut refs = Vec::new();
        match &def.kind {
            dreb_codegen_core::ir::TypeKind::Struct(s) => {
                s.fields.iter().for_each(|f| named(&f.ty, &mut refs))
            }
            dreb_codegen_core::ir::TypeKind::Union(u) => {
                refs.extend(u.variants.iter().map(|v| v.type_name.clone()))
            }
            dreb_codegen_core::ir::TypeKind::OneOf(o) => {
                o.variants.iter().for_each(|v| named(v, &mut refs))
            }
            dreb_codegen_core::ir::TypeKind::Alias(a) => named(a, &mut refs),
            dreb_codegen_core::ir::TypeKind::Enum(_) => {}
        }
        for r in refs {
            assert!(
                dreb_types::TYPES.contains(&r.as_str()),
                "{name} refers to {r}, which is not selected"
            );
        }
    }
}

fn named(ty: &dreb_codegen_core::ir::TypeRef, out: &mut Vec<String>) {
    use dreb_codegen_core::ir::TypeRef;
    match ty {
        TypeRef::Named(n) => out.push(n.clone()),
        TypeRef::List(t) | TypeRef::Map(t) => named(t, out),
        _ => {}
    }
}
