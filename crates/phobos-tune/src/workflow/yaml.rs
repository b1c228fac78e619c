//! A small YAML tree with byte spans, built from saphyr-parser's events.
//!
//! Building it here (instead of using a full YAML value type) keeps what sizes files need to
//! judge an entry: every node's span, whether a scalar was quoted (`'4864'` is a string, `4864`
//! an integer), and mappings as ordered pairs, so that a key given twice is reported for its
//! entry rather than silently overwritten or failing the whole file.

use super::codes;
use phobos_syntax::{Diagnostic, SourceFile, Span};
use saphyr_parser::{Event, Parser, ScalarStyle};

/// One YAML node.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Node {
    /// A scalar as written; `quoted` for the single- and double-quoted and block styles.
    Scalar {
        text: String,
        quoted: bool,
        span: Span,
    },
    Seq {
        items: Vec<Node>,
        span: Span,
    },
    /// Pairs in file order, duplicates kept.
    Map {
        pairs: Vec<(Node, Node)>,
        span: Span,
    },
    /// Something sizes files do not use (an alias or a tagged node); `what` names it.
    Unsupported {
        what: &'static str,
        span: Span,
    },
}

/// What a plain or quoted scalar means (YAML 1.2 core schema, decimal integers only).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value<'a> {
    Int(i64),
    /// A plain decimal integer outside `i64`.
    BigInt,
    Float(f64),
    Bool(bool),
    Null,
    Str(&'a str),
}

impl Node {
    /// The node's span.
    pub(crate) fn span(&self) -> Span {
        match self {
            Node::Scalar { span, .. }
            | Node::Seq { span, .. }
            | Node::Map { span, .. }
            | Node::Unsupported { span, .. } => *span,
        }
    }

    /// A scalar's value; `None` for collections and unsupported nodes.
    pub(crate) fn value(&self) -> Option<Value<'_>> {
        let Node::Scalar { text, quoted, .. } = self else {
            return None;
        };
        if *quoted {
            return Some(Value::Str(text));
        }
        let t = text.as_str();
        let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            return Some(t.parse().map_or(Value::BigInt, Value::Int));
        }
        Some(match t {
            "true" | "True" | "TRUE" => Value::Bool(true),
            "false" | "False" | "FALSE" => Value::Bool(false),
            "" | "~" | "null" | "Null" | "NULL" => Value::Null,
            _ => match t.parse::<f64>() {
                // Rust also parses `inf`/`nan`; YAML spells those `.inf`/`.nan`.
                Ok(f) if t.starts_with(|c: char| c.is_ascii_digit() || "+-.".contains(c)) => {
                    Value::Float(f)
                }
                _ => Value::Str(t),
            },
        })
    }

    /// A short description of what the node is, for messages ("the string '4864'").
    pub(crate) fn describe(&self, file: &SourceFile) -> String {
        match self {
            Node::Seq { .. } => "a sequence".to_string(),
            Node::Map { .. } => "a mapping".to_string(),
            Node::Unsupported { what, .. } => what.to_string(),
            Node::Scalar { span, .. } => {
                let written = file.snippet(*span);
                match self.value() {
                    Some(Value::Int(_) | Value::BigInt) => format!("the integer {written}"),
                    Some(Value::Float(_)) => format!("the number {written}"),
                    Some(Value::Bool(_)) => format!("the boolean {written}"),
                    Some(Value::Null) => "an empty value".to_string(),
                    _ => format!("the string `{written}`"),
                }
            }
        }
    }
}

/// Maps the parser's character indices to byte offsets.
struct Offsets(Vec<usize>);

impl Offsets {
    fn new(text: &str) -> Offsets {
        let mut v: Vec<usize> = text.char_indices().map(|(b, _)| b).collect();
        v.push(text.len());
        Offsets(v)
    }

    fn byte(&self, char_index: usize) -> usize {
        self.0
            .get(char_index)
            .copied()
            .unwrap_or(*self.0.last().unwrap_or(&0))
    }

    fn span(&self, file: &SourceFile, span: saphyr_parser::Span) -> Span {
        let lo = self.byte(span.start.index());
        let hi = self.byte(span.end.index()).max(lo);
        // Block collections end where the next token starts; keep the caret on this node.
        let trimmed = file.text[lo..hi].trim_end().len();
        Span::new(lo, lo + trimmed)
    }
}

/// Parses the single document of `file`; `Ok(None)` for a file with no document (empty or only
/// comments). A syntax error or a second document is one error with its location.
pub(crate) fn parse(file: &SourceFile) -> Result<Option<Node>, Diagnostic> {
    let offsets = Offsets::new(&file.text);
    // A stack of open collections; the finished document lands in `doc`.
    enum Open {
        Seq(Vec<Node>, Span),
        Map(Vec<Node>, Span),
    }
    let mut stack: Vec<Open> = Vec::new();
    let mut doc: Option<Node> = None;
    for event in Parser::new_from_str(&file.text) {
        let (event, raw_span) = event.map_err(|e| {
            let at = offsets.byte(e.marker().index());
            Diagnostic::error(
                codes::YAML_SYNTAX,
                format!("invalid YAML: {}", e.info()),
                Span::new(at, at),
            )
            .with_label("here")
        })?;
        let span = offsets.span(file, raw_span);
        let node = match event {
            Event::Scalar(_, _, _, Some(_))
            | Event::SequenceStart(_, Some(_))
            | Event::MappingStart(_, Some(_)) => {
                return Err(Diagnostic::error(
                    codes::UNSUPPORTED_YAML,
                    "YAML tags (`!tag`) are not supported in sizes files",
                    span,
                )
                .with_label("tagged node")
                .with_help("write the value without a tag"));
            }
            Event::Scalar(text, style, _, None) => Node::Scalar {
                text: text.into_owned(),
                quoted: !matches!(style, ScalarStyle::Plain),
                span,
            },
            Event::Alias(_) => Node::Unsupported {
                what: "an alias (`*name`)",
                span,
            },
            Event::SequenceStart(..) => {
                stack.push(Open::Seq(Vec::new(), span));
                continue;
            }
            Event::MappingStart(..) => {
                stack.push(Open::Map(Vec::new(), span));
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(Open::Seq(items, start)) => Node::Seq {
                    items,
                    span: start.to(span),
                },
                Some(Open::Map(flat, start)) => {
                    let mut pairs = Vec::with_capacity(flat.len() / 2);
                    let mut it = flat.into_iter();
                    while let (Some(k), Some(v)) = (it.next(), it.next()) {
                        pairs.push((k, v));
                    }
                    Node::Map {
                        pairs,
                        span: start.to(span),
                    }
                }
                None => continue,
            },
            Event::DocumentStart(_) if doc.is_some() => {
                return Err(Diagnostic::error(
                    codes::NOT_A_SEQUENCE,
                    "a sizes file holds one YAML document; this is a second one",
                    span,
                )
                .with_label("second document")
                .with_help("put every problem in one sequence, or use one file per document"));
            }
            _ => continue,
        };
        match stack.last_mut() {
            Some(Open::Seq(items, _) | Open::Map(items, _)) => items.push(node),
            None => doc = Some(node),
        }
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Node {
        parse(&SourceFile::new("t.yaml", text)).unwrap().unwrap()
    }

    #[test]
    fn values_follow_the_core_schema() {
        let Node::Seq { items, .. } =
            doc("[1, '1', -3, 1.5, true, ~, abc, \"x\", 99999999999999999999, inf]")
        else {
            panic!("not a sequence")
        };
        let values: Vec<_> = items.iter().map(|n| n.value().unwrap()).collect();
        assert_eq!(
            values,
            vec![
                Value::Int(1),
                Value::Str("1"),
                Value::Int(-3),
                Value::Float(1.5),
                Value::Bool(true),
                Value::Null,
                Value::Str("abc"),
                Value::Str("x"),
                Value::BigInt,
                Value::Str("inf"),
            ]
        );
    }

    #[test]
    fn spans_are_bytes_even_after_multibyte_characters() {
        let text = "- {é: 1, M: 2}\n";
        let Node::Seq { items, .. } = doc(text) else {
            panic!()
        };
        let Node::Map { pairs, span } = &items[0] else {
            panic!()
        };
        assert_eq!(&text[span.range()], "{é: 1, M: 2}");
        assert_eq!(&text[pairs[1].0.span().range()], "M");
        assert_eq!(&text[pairs[1].1.span().range()], "2");
    }

    #[test]
    fn duplicate_keys_are_kept_in_order() {
        let Node::Map { pairs, .. } = doc("M: 1\nM: 2\n") else {
            panic!()
        };
        assert_eq!(pairs.len(), 2);
        assert_eq!(pairs[1].1.value(), Some(Value::Int(2)));
    }

    #[test]
    fn empty_and_comment_only_files_have_no_document() {
        assert_eq!(parse(&SourceFile::new("t", "")).unwrap(), None);
        assert_eq!(parse(&SourceFile::new("t", "# nothing\n")).unwrap(), None);
    }

    #[test]
    fn syntax_errors_and_second_documents_are_located() {
        let f = SourceFile::new("t", "- {M: 1, N: [2\n");
        let e = parse(&f).unwrap_err();
        assert_eq!(e.code, codes::YAML_SYNTAX);
        assert_eq!(f.line_col(e.primary.span.lo).0, 2);
        let f = SourceFile::new("t", "- {M: 1}\n---\n- {M: 2}\n");
        let e = parse(&f).unwrap_err();
        assert_eq!(e.code, codes::NOT_A_SEQUENCE);
        assert_eq!(f.line_col(e.primary.span.lo).0, 2);
    }
}
