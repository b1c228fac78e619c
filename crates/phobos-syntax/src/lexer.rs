//! The lexer: text to tokens, reporting (and skipping) what it cannot read.
//!
//! Diagnostic codes raised here are `E0001`..`E0005`; the table is in [`crate::codes`].
//! Every problem yields a [`TokenKind::Error`] token at its place so the parser can stop there
//! without reporting it a second time.

use crate::codes;
use crate::diag::Diagnostic;
use crate::span::Span;
use crate::token::{Token, TokenKind};

/// Splits `text` into tokens ending with [`TokenKind::Eof`]; comments are dropped.
pub fn lex(text: &str) -> (Vec<Token>, Vec<Diagnostic>) {
    let mut lx = Lexer {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        tokens: Vec::new(),
        diags: Vec::new(),
    };
    lx.run();
    (lx.tokens, lx.diags)
}

struct Lexer<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    tokens: Vec<Token>,
    diags: Vec<Diagnostic>,
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident_continue(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

impl Lexer<'_> {
    fn at(&self, offset: usize) -> u8 {
        self.bytes.get(self.pos + offset).copied().unwrap_or(0)
    }

    fn push(&mut self, kind: TokenKind, lo: usize) {
        self.tokens.push(Token {
            kind,
            span: Span::new(lo, self.pos),
        });
    }

    fn run(&mut self) {
        while self.pos < self.bytes.len() {
            let lo = self.pos;
            let b = self.bytes[lo];
            match b {
                b'\n' => {
                    self.pos += 1;
                    self.push(TokenKind::Newline, lo);
                }
                b' ' | b'\t' | b'\r' | b'\x0c' => self.pos += 1,
                b'/' if self.at(1) == b'/' => {
                    while self.pos < self.bytes.len() && self.bytes[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                }
                b'/' if self.at(1) == b'*' => self.block_comment(),
                b'0'..=b'9' => self.number(),
                _ if is_ident_start(b) => {
                    while is_ident_continue(self.at(0)) {
                        self.pos += 1;
                    }
                    let kind =
                        TokenKind::keyword(&self.text[lo..self.pos]).unwrap_or(TokenKind::Ident);
                    self.push(kind, lo);
                }
                _ => self.punct(),
            }
        }
        self.push(TokenKind::Eof, self.pos);
    }

    /// `/* ... */`, nesting: `/* a /* b */ c */` is one comment. A comment that spans lines
    /// ends a statement like the newline it contains.
    fn block_comment(&mut self) {
        let lo = self.pos;
        self.pos += 2;
        let mut depth = 1usize;
        let mut newline = false;
        while depth > 0 {
            match (self.at(0), self.at(1)) {
                _ if self.pos >= self.bytes.len() => {
                    self.pos = self.bytes.len();
                    self.diags.push(
                        Diagnostic::error(
                            codes::UNTERMINATED_COMMENT,
                            "unterminated block comment",
                            Span::new(lo, lo + 2),
                        )
                        .with_label("this comment is never closed")
                        .with_help("close it with `*/` (block comments nest)"),
                    );
                    return;
                }
                (b'/', b'*') => {
                    depth += 1;
                    self.pos += 2;
                }
                (b'*', b'/') => {
                    depth -= 1;
                    self.pos += 2;
                }
                (b'\n', _) => {
                    newline = true;
                    self.pos += 1;
                }
                _ => self.pos += 1,
            }
        }
        if newline {
            self.push(TokenKind::Newline, lo);
        }
    }

    fn take_while(&mut self, pred: impl Fn(u8) -> bool) {
        while self.pos < self.bytes.len() && pred(self.bytes[self.pos]) {
            self.pos += 1;
        }
    }

    fn number(&mut self) {
        let lo = self.pos;
        if self.at(0) == b'0' && matches!(self.at(1), b'x' | b'X') {
            self.pos += 2;
            self.take_while(|b| b.is_ascii_hexdigit() || b == b'_');
            if self.bad_suffix(lo) {
                return;
            }
            let digits: String = self.text[lo + 2..self.pos]
                .chars()
                .filter(|&c| c != '_')
                .collect();
            if digits.is_empty() {
                self.error(
                    Diagnostic::error(
                        codes::BAD_NUMBER,
                        "hexadecimal literal has no digits",
                        self.span_from(lo),
                    )
                    .with_help("write digits after `0x`, e.g. `0xff`"),
                );
                return;
            }
            match u64::from_str_radix(&digits, 16)
                .ok()
                .and_then(|v| i64::try_from(v).ok())
            {
                Some(v) => self.push(TokenKind::Int(v), lo),
                None => self.int_overflow(lo),
            }
            return;
        }
        self.take_while(|b| b.is_ascii_digit() || b == b'_');
        let mut is_float = false;
        // `1.` and `1.5` are floats; `1..N` is `1` `..` `N`, and `1.x` is a field access.
        if self.at(0) == b'.'
            && self.at(1) != b'.'
            && (!is_ident_start(self.at(1)) || self.exponent_at(1))
        {
            is_float = true;
            self.pos += 1;
            self.take_while(|b| b.is_ascii_digit() || b == b'_');
        }
        if self.exponent_at(0) {
            is_float = true;
            self.pos += 1;
            if matches!(self.at(0), b'+' | b'-') {
                self.pos += 1;
            }
            self.take_while(|b| b.is_ascii_digit() || b == b'_');
        }
        if self.bad_suffix(lo) {
            return;
        }
        let clean: String = self.text[lo..self.pos]
            .chars()
            .filter(|&c| c != '_')
            .collect();
        if is_float {
            match clean.parse::<f64>() {
                Ok(v) if v.is_finite() => self.push(TokenKind::Float(v), lo),
                _ => self.error(
                    Diagnostic::error(
                        codes::FLOAT_OVERFLOW,
                        "float literal is too large",
                        self.span_from(lo),
                    )
                    .with_label("does not fit in f64")
                    .with_help("use `inf` for an infinite value"),
                ),
            }
        } else {
            match clean.parse::<i64>() {
                Ok(v) => self.push(TokenKind::Int(v), lo),
                Err(_) => self.int_overflow(lo),
            }
        }
    }

    /// An exponent `e5`, `E+4`, `e-3` starts `offset` bytes ahead.
    fn exponent_at(&self, offset: usize) -> bool {
        matches!(self.at(offset), b'e' | b'E')
            && (self.at(offset + 1).is_ascii_digit()
                || (matches!(self.at(offset + 1), b'+' | b'-')
                    && self.at(offset + 2).is_ascii_digit()))
    }

    /// Letters glued to a number (`12abc`, `1e`, `1f32`): one error for the whole word.
    fn bad_suffix(&mut self, lo: usize) -> bool {
        if !is_ident_continue(self.at(0)) {
            return false;
        }
        let suffix_lo = self.pos;
        self.take_while(is_ident_continue);
        let word = &self.text[lo..self.pos];
        let suffix = &self.text[suffix_lo..self.pos];
        let number = &self.text[lo..suffix_lo];
        let help = if suffix.starts_with(['e', 'E']) {
            "an exponent needs digits, e.g. `1e-3`".to_string()
        } else if matches!(
            suffix,
            "f16" | "f32" | "f64" | "i32" | "i64" | "u32" | "bf16" | "i8" | "u8"
        ) {
            format!("literals take no type suffix; write a cast: `{suffix}({number})`")
        } else {
            "separate the number from the name".to_string()
        };
        self.error(
            Diagnostic::error(
                codes::BAD_NUMBER,
                format!("malformed number `{word}`"),
                Span::new(lo, self.pos),
            )
            .with_label(format!("invalid suffix `{suffix}`"))
            .with_help(help),
        );
        true
    }

    fn int_overflow(&mut self, lo: usize) {
        self.error(
            Diagnostic::error(
                codes::INT_OVERFLOW,
                "integer literal is too large",
                self.span_from(lo),
            )
            .with_label("does not fit in i64")
            .with_note(format!("the largest integer literal is {}", i64::MAX)),
        );
    }

    fn span_from(&self, lo: usize) -> Span {
        Span::new(lo, self.pos)
    }

    /// Records a diagnostic for the text from the last token to `pos` and an Error token there.
    fn error(&mut self, d: Diagnostic) {
        let span = d.primary.span;
        self.diags.push(d);
        self.tokens.push(Token {
            kind: TokenKind::Error,
            span,
        });
    }

    fn punct(&mut self) {
        use TokenKind::*;
        let lo = self.pos;
        let (kind, len) = match (self.at(0), self.at(1)) {
            (b':', b'+') => (ColonPlus, 2),
            (b'.', b'.') => (DotDot, 2),
            (b'+', b'=') => (PlusEq, 2),
            (b'-', b'=') => (MinusEq, 2),
            (b'*', b'=') => (StarEq, 2),
            (b'/', b'=') => (SlashEq, 2),
            (b'=', b'=') => (EqEq, 2),
            (b'!', b'=') => (Ne, 2),
            (b'<', b'=') => (Le, 2),
            (b'>', b'=') => (Ge, 2),
            (b'<', b'<') => (Shl, 2),
            (b'>', b'>') => (Shr, 2),
            (b'&', b'&') => (AndAnd, 2),
            (b'|', b'|') => (OrOr, 2),
            (b'(', _) => (LParen, 1),
            (b')', _) => (RParen, 1),
            (b'[', _) => (LBracket, 1),
            (b']', _) => (RBracket, 1),
            (b'{', _) => (LBrace, 1),
            (b'}', _) => (RBrace, 1),
            (b',', _) => (Comma, 1),
            (b';', _) => (Semi, 1),
            (b':', _) => (Colon, 1),
            (b'.', _) => (Dot, 1),
            (b'@', _) => (At, 1),
            (b'=', _) => (Eq, 1),
            (b'<', _) => (Lt, 1),
            (b'>', _) => (Gt, 1),
            (b'!', _) => (Bang, 1),
            (b'&', _) => (Amp, 1),
            (b'|', _) => (Pipe, 1),
            (b'^', _) => (Caret, 1),
            (b'+', _) => (Plus, 1),
            (b'-', _) => (Minus, 1),
            (b'*', _) => (Star, 1),
            (b'/', _) => (Slash, 1),
            (b'%', _) => (Percent, 1),
            _ => {
                let ch = self.text[lo..].chars().next().unwrap_or('\u{fffd}');
                self.pos += ch.len_utf8().max(1);
                let mut d = Diagnostic::error(
                    codes::UNKNOWN_CHAR,
                    format!("unknown character `{}`", ch.escape_debug()),
                    self.span_from(lo),
                )
                .with_label("not part of Phobos");
                if let Some(help) = unknown_char_help(ch) {
                    d = d.with_help(help);
                }
                self.error(d);
                return;
            }
        };
        self.pos += len;
        self.push(kind, lo);
    }
}

fn unknown_char_help(ch: char) -> Option<&'static str> {
    Some(match ch {
        '#' => "comments start with `//`",
        '\'' | '"' => "Phobos has no strings or characters",
        '~' => "Phobos has no bitwise not; write `x ^ -1`",
        '?' => "Phobos has no `?:`; use `where(c, a, b)`",
        '×' | '·' => "multiply with `*`",
        '−' | '–' => "this is not an ASCII minus; write `-`",
        _ => return None,
    })
}
