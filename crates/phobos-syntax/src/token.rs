//! Tokens produced by the lexer.
//!
//! Newlines are tokens because they end statements; the parser decides where they are
//! insignificant (inside `(...)` and `[...]`, after a binary operator or a comma).

use crate::span::Span;

/// What a token is. Literal values are decoded by the lexer; identifier text is read back
/// from the source through the span.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TokenKind {
    /// A name that is not a keyword (`tensor`, `tile`, `range`, `unroll` and `ctx` are names).
    Ident,
    /// A decimal or hexadecimal integer literal that fits in `i64`.
    Int(i64),
    /// A float literal (`1.0`, `1.`, `1e-3`, `2.5E+4`).
    Float(f64),

    Kernel,
    Let,
    Var,
    For,
    In,
    While,
    If,
    Else,
    Break,
    Continue,
    True,
    False,

    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Semi,
    /// `:`
    Colon,
    /// `:+`, the span-slice operator.
    ColonPlus,
    Dot,
    /// `..`: not Phobos syntax, lexed so that `for i in 0..N` gets a precise error.
    DotDot,
    At,

    /// `=`
    Eq,
    PlusEq,
    MinusEq,
    StarEq,
    SlashEq,

    EqEq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    AndAnd,
    OrOr,
    Bang,
    Amp,
    Pipe,
    Caret,
    Shl,
    Shr,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,

    /// A line break (or a block comment that spans lines).
    Newline,
    /// Text the lexer already reported (unknown character, malformed number). The parser
    /// stops at it without a second diagnostic.
    Error,
    /// End of input; always the last token.
    Eof,
}

impl TokenKind {
    /// The keyword spelled `word`, if it is one.
    pub fn keyword(word: &str) -> Option<TokenKind> {
        Some(match word {
            "kernel" => TokenKind::Kernel,
            "let" => TokenKind::Let,
            "var" => TokenKind::Var,
            "for" => TokenKind::For,
            "in" => TokenKind::In,
            "while" => TokenKind::While,
            "if" => TokenKind::If,
            "else" => TokenKind::Else,
            "break" => TokenKind::Break,
            "continue" => TokenKind::Continue,
            "true" => TokenKind::True,
            "false" => TokenKind::False,
            _ => return None,
        })
    }

    /// True for the reserved words.
    pub fn is_keyword(self) -> bool {
        use TokenKind::*;
        matches!(
            self,
            Kernel | Let | Var | For | In | While | If | Else | Break | Continue | True | False
        )
    }

    /// The fixed spelling of punctuation and keywords; `None` for literals, names and markers.
    pub fn text(self) -> Option<&'static str> {
        use TokenKind::*;
        Some(match self {
            Kernel => "kernel",
            Let => "let",
            Var => "var",
            For => "for",
            In => "in",
            While => "while",
            If => "if",
            Else => "else",
            Break => "break",
            Continue => "continue",
            True => "true",
            False => "false",
            LParen => "(",
            RParen => ")",
            LBracket => "[",
            RBracket => "]",
            LBrace => "{",
            RBrace => "}",
            Comma => ",",
            Semi => ";",
            Colon => ":",
            ColonPlus => ":+",
            Dot => ".",
            DotDot => "..",
            At => "@",
            Eq => "=",
            PlusEq => "+=",
            MinusEq => "-=",
            StarEq => "*=",
            SlashEq => "/=",
            EqEq => "==",
            Ne => "!=",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
            AndAnd => "&&",
            OrOr => "||",
            Bang => "!",
            Amp => "&",
            Pipe => "|",
            Caret => "^",
            Shl => "<<",
            Shr => ">>",
            Plus => "+",
            Minus => "-",
            Star => "*",
            Slash => "/",
            Percent => "%",
            Ident | Int(_) | Float(_) | Newline | Error | Eof => return None,
        })
    }
}

/// One token with the byte span of its text.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Token {
    pub kind: TokenKind,
    pub span: Span,
}

impl Token {
    /// How a diagnostic names this token: "`foo`", "keyword `for`", "a newline", "end of file".
    pub fn describe(&self, text: &str) -> String {
        match self.kind {
            TokenKind::Newline => "a newline".to_string(),
            TokenKind::Eof => "end of file".to_string(),
            k if k.is_keyword() => format!("keyword `{}`", text_of(text, self.span)),
            _ => format!("`{}`", text_of(text, self.span)),
        }
    }
}

fn text_of(text: &str, span: Span) -> &str {
    text.get(span.range()).unwrap_or("?")
}
