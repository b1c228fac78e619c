//! Options after the indices of a tensor access: `X[r, c :+ n, cache = evict_last]`.
//!
//! The only option is `cache`, the eviction hint of the access (`ir::Eviction`). A hint never
//! changes a value, so the checker only validates the spelling; tiles and atomics take no
//! options.

use super::Cx;
use crate::codes;
use crate::suggest::did_you_mean;
use phobos_ir as ir;
use phobos_syntax::ast::{self, ExprKind};
use phobos_syntax::Diagnostic;

/// The option names an access accepts.
const OPTIONS: [&str; 1] = ["cache"];

/// Names a user porting a Triton kernel may write for `cache`.
const TRITON_NAMES: [&str; 2] = ["eviction_policy", "eviction"];

impl Cx<'_> {
    /// The eviction hint of a tensor access's options; `None` after an error (reported).
    pub(crate) fn access_options(&mut self, options: &[ast::IndexOption]) -> Option<ir::Eviction> {
        let mut cache: Option<(ir::Eviction, &ast::IndexOption)> = None;
        let mut ok = true;
        for o in options {
            if o.name.name != "cache" {
                self.unknown_option(o);
                ok = false;
                continue;
            }
            if let Some((_, first)) = cache {
                self.error(
                    Diagnostic::error(
                        codes::ACCESS_OPTION,
                        "`cache` is given twice in this access",
                        o.name.span,
                    )
                    .with_label("given again here")
                    .with_secondary(first.name.span, "first given here")
                    .with_help("keep one `cache = ..`"),
                );
                ok = false;
                continue;
            }
            match self.eviction_value(&o.value) {
                Some(e) => cache = Some((e, o)),
                None => ok = false,
            }
        }
        ok.then(|| cache.map_or(ir::Eviction::Normal, |(e, _)| e))
    }

    /// Reports the options of an access that takes none (a tile element, an atomic).
    pub(crate) fn no_options(
        &mut self,
        options: &[ast::IndexOption],
        what: &str,
        why: &str,
    ) -> bool {
        let Some(o) = options.first() else {
            return true;
        };
        self.error(
            Diagnostic::error(
                codes::ACCESS_OPTION,
                format!("{what} takes no `{}` option", o.name.name),
                o.name.span.to(o.value.span),
            )
            .with_label("not allowed here")
            .with_help(why.to_string()),
        );
        false
    }

    fn unknown_option(&mut self, o: &ast::IndexOption) {
        let name = o.name.name.as_str();
        let mut d = Diagnostic::error(
            codes::ACCESS_OPTION,
            format!("unknown access option `{name}`"),
            o.name.span,
        )
        .with_label("not an option of a tensor access");
        d = if TRITON_NAMES.contains(&name) {
            d.with_help(format!(
                "the eviction hint is spelled `cache = {}`",
                self.hint_text(&o.value).unwrap_or("evict_last")
            ))
        } else {
            match did_you_mean(name, OPTIONS) {
                Some(s) => d.with_help(s),
                None => d.with_help("the one option is `cache = evict_first | evict_last | evict_normal | no_allocate`"),
            }
        };
        self.error(d);
    }

    /// A hint name written as the value, if it is a bare name of one.
    fn hint_text(&self, e: &ast::Expr) -> Option<&'static str> {
        match &e.kind {
            ExprKind::Name(id) => ir::Eviction::from_name(&id.name).map(|h| h.name()),
            _ => None,
        }
    }

    fn eviction_value(&mut self, e: &ast::Expr) -> Option<ir::Eviction> {
        let names: Vec<&str> = ir::Eviction::ALL.iter().map(|h| h.name()).collect();
        let list = names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let ExprKind::Name(id) = &e.kind else {
            self.error(
                Diagnostic::error(
                    codes::EVICTION_VALUE,
                    "the eviction hint must be one of its names",
                    e.span,
                )
                .with_label("not a hint name")
                .with_help(format!("write one of {list}: `cache = evict_last`")),
            );
            return None;
        };
        if let Some(h) = ir::Eviction::from_name(&id.name) {
            return Some(h);
        }
        let d = Diagnostic::error(
            codes::EVICTION_VALUE,
            format!("unknown eviction hint `{}`", id.name),
            e.span,
        )
        .with_label("not a hint");
        let d = match did_you_mean(&id.name, names.iter().copied()) {
            Some(s) => d.with_help(s),
            None => d.with_help(format!("the hints are {list}")),
        };
        self.error(d);
        None
    }
}
