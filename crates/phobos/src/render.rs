//! Renders diagnostics for people: `file:line:col`, the source line, a caret under the span,
//! the message and a `help:` line. Plain text unless colour is asked for.

use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};
use phobos_syntax::{Diagnostic, Severity, SourceFile};

/// Renders one diagnostic against the file it points into.
pub fn render(diag: &Diagnostic, file: &SourceFile, color: bool) -> String {
    let level = match diag.severity {
        Severity::Error => Level::ERROR,
        Severity::Warning => Level::WARNING,
    };
    let clamp = |r: std::ops::Range<usize>| {
        let len = file.text.len();
        let lo = r.start.min(len);
        lo..r.end.clamp(lo, len)
    };
    let mut snippet = Snippet::source(file.text.as_str())
        .path(file.name.as_str())
        .annotation(
            AnnotationKind::Primary
                .span(clamp(diag.primary.span.range()))
                .label(non_empty(&diag.primary.message)),
        );
    for label in &diag.secondary {
        snippet = snippet.annotation(
            AnnotationKind::Context
                .span(clamp(label.span.range()))
                .label(non_empty(&label.message)),
        );
    }
    let mut title = level.primary_title(diag.message.as_str());
    if !diag.code.is_empty() {
        title = title.id(diag.code);
    }
    let mut group = title.element(snippet);
    for note in &diag.notes {
        group = group.element(Level::NOTE.message(note.as_str()));
    }
    if let Some(help) = &diag.help {
        group = group.element(Level::HELP.message(help.as_str()));
    }
    let report: &[Group<'_>] = &[group];
    let renderer = if color {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    renderer.render(report)
}

/// Renders a list of diagnostics, one blank line between them.
pub fn render_all(diags: &[Diagnostic], file: &SourceFile, color: bool) -> String {
    diags
        .iter()
        .map(|d| render(d, file, color))
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn non_empty(s: &str) -> Option<&str> {
    (!s.is_empty()).then_some(s)
}

/// Whether stderr should get colour: a terminal, and `NO_COLOR` unset.
pub fn stderr_color() -> bool {
    use std::io::IsTerminal;
    std::env::var_os("NO_COLOR").is_none() && std::io::stderr().is_terminal()
}

#[cfg(test)]
mod tests {
    use super::*;
    use phobos_syntax::Span;

    #[test]
    fn renders_location_caret_and_help() {
        let file = SourceFile::new("k.ph", "kernel k() {\n  let x = y\n}\n");
        let d = Diagnostic::error("E0001", "unknown name `y`", Span::new(23, 24))
            .with_label("not found")
            .with_help("declare it with `let`");
        let out = render(&d, &file, false);
        assert!(out.contains("error[E0001]: unknown name `y`"), "{out}");
        assert!(out.contains("k.ph:2:11"), "{out}");
        assert!(out.contains("^ not found"), "{out}");
        assert!(out.contains("help: declare it with `let`"), "{out}");
    }
}
