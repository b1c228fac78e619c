//! The documentation cannot drift: every ```ph block of docs/language.md checks clean, and
//! docs/diagnostics.md lists every code of the checker and of the parser.

mod common;

fn doc(name: &str) -> String {
    std::fs::read_to_string(format!("{}/../../docs/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// The contents of the fenced blocks tagged `tag`, with their starting lines.
fn blocks(text: &str, tag: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (n, line) in text.lines().enumerate() {
        match &mut current {
            None if line.trim_start() == format!("```{tag}") => {
                current = Some((n + 1, String::new()))
            }
            Some(_) if line.trim_start() == "```" => out.push(current.take().unwrap()),
            Some((_, body)) => {
                body.push_str(line);
                body.push('\n');
            }
            None => {}
        }
    }
    assert!(current.is_none(), "unclosed ```{tag} block");
    out
}

#[test]
fn language_examples_check_clean() {
    let text = doc("language.md");
    let examples = blocks(&text, "ph");
    assert!(examples.len() >= 8, "only {} examples", examples.len());
    for (line, src) in examples {
        let d = common::diags(&src);
        assert!(
            d.is_empty(),
            "docs/language.md block at line {line}:\n{src}\n{}",
            common::show(&d)
        );
    }
}

#[test]
fn diagnostics_table_lists_every_code() {
    let text = doc("diagnostics.md");
    let row = |code: &str| text.lines().any(|l| l.starts_with(&format!("| {code} |")));
    for (code, meaning) in phobos_check::codes::ALL {
        assert!(
            row(code),
            "docs/diagnostics.md has no row for {code} ({meaning})"
        );
    }
    let syntax = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../phobos-syntax/src/codes.rs"
    ))
    .unwrap();
    for code in syntax
        .split('"')
        .filter(|s| s.len() == 5 && s.starts_with("E00"))
    {
        assert!(
            row(code),
            "docs/diagnostics.md has no row for the syntax code {code}"
        );
    }
    for line in text
        .lines()
        .filter(|l| l.starts_with("| E") || l.starts_with("| W"))
    {
        let code = &line[2..7];
        let known = phobos_check::codes::ALL.iter().any(|(c, _)| *c == code)
            || syntax.contains(&format!("\"{code}\""));
        assert!(
            known,
            "docs/diagnostics.md lists {code}, which no crate raises"
        );
    }
}
