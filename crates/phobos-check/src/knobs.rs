//! W0005: an `@autotune` name one typo away from a knob the code generator reads
//! (`phobos_ir::knobs::Knob`: `STAGE` for `STAGES`, `GROUPM` for `GROUP_M`), that the kernel does
//! not use itself. Such a name steers nothing: the code generator reads only the exact names,
//! and the kernel's own code never sees it, so every point of it is the same program.

use crate::codes;
use crate::suggest::closest;
use phobos_ir::knobs::Knob;
use phobos_syntax::ast::{self, AttrKind};
use phobos_syntax::token::TokenKind;
use phobos_syntax::{Diagnostic, SourceFile};

/// Warns about each declared name of `k` that is a near miss of a knob and used nowhere else in
/// the kernel (attributes, signature, body).
pub(crate) fn near_misses(file: &SourceFile, k: &ast::Kernel, diags: &mut Vec<Diagnostic>) {
    for attr in &k.attrs {
        let AttrKind::Autotune(entries) = &attr.kind else {
            continue;
        };
        for e in entries {
            let name = e.name.name.as_str();
            if Knob::from_name(name).is_some() {
                continue;
            }
            let Some(knob) = closest(name, Knob::names()) else {
                continue;
            };
            if used_elsewhere(file, k, &e.name) {
                continue;
            }
            diags.push(
                Diagnostic::warning(
                    codes::KNOB_NEAR_MISS,
                    format!(
                        "`{name}` is not used by the kernel, and the code generator does not \
                         read it"
                    ),
                    e.name.span,
                )
                .with_label(format!("steers nothing: did you mean `{knob}`?"))
                .with_note(format!(
                    "the code generator reads these @autotune names: {}",
                    Knob::names().collect::<Vec<_>>().join(", ")
                ))
                .with_help(format!(
                    "rename it to `{knob}` ({}), or use it in the kernel",
                    Knob::from_name(knob).map_or("", Knob::meaning)
                )),
            );
        }
    }
}

/// Whether an identifier with the text of `decl` occurs in the kernel's source other than at
/// `decl` itself.
fn used_elsewhere(file: &SourceFile, k: &ast::Kernel, decl: &ast::Ident) -> bool {
    let text = file.snippet(k.span);
    let (tokens, _) = phobos_syntax::lex(text);
    let base = k.span.lo;
    tokens.iter().any(|t| {
        t.kind == TokenKind::Ident
            && text.get(t.span.range()) == Some(decl.name.as_str())
            && t.span.lo + base != decl.span.lo
    })
}
