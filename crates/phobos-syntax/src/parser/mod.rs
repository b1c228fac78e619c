//! The parser: recursive descent over the token list, with recovery.
//!
//! Diagnostic codes raised here are `E0020`..`E0035`; the table is in [`crate::codes`].
//!
//! Recovery: a statement that fails to parse is dropped and the parser skips to the next
//! statement boundary (a newline or `;` outside brackets, or a `}` that closes the block); a
//! kernel header that fails skips to the next `kernel` or top-level `@`. So one run reports every
//! error, and every loop consumes at least one token per turn, so parsing always ends.
//!
//! Newlines end statements, except inside `(...)` and `[...]` and after a binary operator,
//! an assignment operator or a comma: the `ignore_nl` flag says which mode the cursor is in.

mod exprs;
mod index;
mod items;
mod stmts;

use crate::ast;
use crate::codes;
use crate::diag::Diagnostic;
use crate::lexer::lex;
use crate::span::{SourceFile, Span};
use crate::token::{Token, TokenKind};

/// Deepest nesting the parser accepts, both of brackets and blocks it recurses through and of
/// the expression trees it builds (so walks over the AST stay shallow too). Deeper input is the
/// diagnostic E0028, never a stack overflow.
pub const MAX_DEPTH: u32 = 256;

/// Parses a whole file. Always returns a (possibly partial) AST and every diagnostic found, lexer
/// and parser ones together, in source order.
pub fn parse(file: &SourceFile) -> (ast::File, Vec<Diagnostic>) {
    let mut p = Parser::new(&file.text);
    let kernels = p.file();
    (ast::File { kernels }, p.finish())
}

/// Parses one expression (newlines inside it are ignored); for tests and tools.
pub fn parse_expr(file: &SourceFile) -> (Option<ast::Expr>, Vec<Diagnostic>) {
    let mut p = Parser::new(&file.text);
    p.ignore_nl = true;
    let expr = p.expr().ok();
    if expr.is_some() && !p.at(TokenKind::Eof) {
        p.error_expected("end of input");
    }
    (expr, p.finish())
}

/// Marker for a failed parse; its diagnostic has already been recorded.
#[derive(Debug)]
pub(crate) struct ParseError;

pub(crate) type PResult<T> = Result<T, ParseError>;

pub(crate) struct Parser<'a> {
    text: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    /// End of the last consumed token other than a newline: where a missing token belongs.
    prev_hi: u32,
    ignore_nl: bool,
    depth: u32,
    diags: Vec<Diagnostic>,
    /// Parse errors at end of file add nothing after an unterminated block comment.
    quiet_eof: bool,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Parser<'a> {
        let (tokens, diags) = lex(text);
        let quiet_eof = diags.iter().any(|d| d.code == codes::UNTERMINATED_COMMENT);
        Parser {
            text,
            tokens,
            pos: 0,
            prev_hi: 0,
            ignore_nl: false,
            depth: 0,
            diags,
            quiet_eof,
        }
    }

    /// The diagnostics in source order (lexer and parser ones interleaved).
    fn finish(mut self) -> Vec<Diagnostic> {
        self.diags.sort_by_key(|d| d.primary.span.lo);
        self.diags
    }

    // ---- cursor -------------------------------------------------------------------------

    /// Index of the `n`-th significant token from the cursor.
    fn index_of(&self, n: usize) -> usize {
        let mut i = self.pos;
        let mut left = n;
        loop {
            let kind = self.tokens[i].kind;
            if kind == TokenKind::Eof {
                return i;
            }
            if !(self.ignore_nl && kind == TokenKind::Newline) {
                if left == 0 {
                    return i;
                }
                left -= 1;
            }
            i += 1;
        }
    }

    fn peek(&self) -> Token {
        self.tokens[self.index_of(0)]
    }

    fn peek_kind(&self) -> TokenKind {
        self.peek().kind
    }

    fn nth_kind(&self, n: usize) -> TokenKind {
        self.tokens[self.index_of(n)].kind
    }

    fn at(&self, kind: TokenKind) -> bool {
        self.peek_kind() == kind
    }

    /// Consumes and returns the next significant token (never moves past Eof).
    fn bump(&mut self) -> Token {
        let i = self.index_of(0);
        let tok = self.tokens[i];
        if tok.kind != TokenKind::Eof {
            self.pos = i + 1;
            if tok.kind != TokenKind::Newline {
                self.prev_hi = tok.span.hi;
            }
        } else {
            self.pos = i;
        }
        tok
    }

    fn eat(&mut self, kind: TokenKind) -> Option<Token> {
        if self.at(kind) {
            Some(self.bump())
        } else {
            None
        }
    }

    /// Skips newline tokens whatever the mode (line continuation).
    fn skip_newlines(&mut self) {
        while self.tokens[self.pos].kind == TokenKind::Newline {
            self.pos += 1;
        }
    }

    /// The next token is the first on its line.
    fn at_line_start(&self) -> bool {
        let i = self.index_of(0);
        i > 0 && self.tokens[i - 1].kind == TokenKind::Newline
    }

    fn snippet(&self, span: Span) -> &'a str {
        self.text.get(span.range()).unwrap_or("")
    }

    /// Empty span right after the previous token: where a missing token goes.
    fn missing_span(&self) -> Span {
        Span {
            lo: self.prev_hi,
            hi: self.prev_hi,
        }
    }

    /// Runs `f` with newlines significant (`false`) or not (`true`), restoring the mode after.
    fn with_nl<T>(&mut self, ignore: bool, f: impl FnOnce(&mut Self) -> T) -> T {
        let old = std::mem::replace(&mut self.ignore_nl, ignore);
        let r = f(self);
        self.ignore_nl = old;
        r
    }

    /// Enters one nesting level, or reports that the input nests too deeply. Every `enter`
    /// that succeeds is paired with a [`Parser::leave`]. (Plain calls rather than a closure
    /// wrapper: each closure is one more stack frame per nesting level in unoptimized builds.)
    fn enter(&mut self, what: &str) -> PResult<()> {
        if self.depth >= MAX_DEPTH {
            return Err(self.too_deep(what));
        }
        self.depth += 1;
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    #[cold]
    #[inline(never)]
    fn too_deep(&mut self, what: &str) -> ParseError {
        let span = self.peek().span;
        self.report(
            Diagnostic::error(codes::TOO_DEEP, format!("{what} nested too deeply"), span)
                .with_label(format!("more than {MAX_DEPTH} levels deep"))
                .with_help("split it with `let` bindings"),
        );
        ParseError
    }

    // ---- diagnostics ----------------------------------------------------------------------

    /// Records a parse diagnostic, dropping a second one at the same place (a cascade).
    fn report(&mut self, d: Diagnostic) {
        if let Some(last) = self.diags.last() {
            if last.primary.span.lo == d.primary.span.lo && last.is_error() {
                return;
            }
        }
        self.diags.push(d);
    }

    /// Where a diagnostic about the next token points: the token itself, or, when the token is
    /// a line end, `}`, end of file or on a later line, the empty span where the missing token
    /// belongs (right after the previous token).
    fn found_span(&self) -> (Span, String) {
        let tok = self.peek();
        let found = tok.describe(self.text);
        match tok.kind {
            TokenKind::Newline | TokenKind::Eof | TokenKind::RBrace | TokenKind::Semi => {
                (self.missing_span(), found)
            }
            _ if self.newline_before_next() => (self.missing_span(), found),
            _ => (tok.span, found),
        }
    }

    /// A newline separates the cursor from the next significant token (possible only where
    /// newlines are ignored).
    fn newline_before_next(&self) -> bool {
        self.tokens[self.pos..self.index_of(0)]
            .iter()
            .any(|t| t.kind == TokenKind::Newline)
    }

    /// The next token is one the lexer already reported: say nothing more.
    fn quiet(&self) -> bool {
        let kind = self.peek_kind();
        kind == TokenKind::Error || (kind == TokenKind::Eof && self.quiet_eof)
    }

    /// "expected X, found Y" at the next token.
    fn error_expected(&mut self, expected: &str) -> ParseError {
        self.error_expected_with(codes::EXPECTED, expected, None)
    }

    fn error_expected_with(
        &mut self,
        code: &'static str,
        expected: &str,
        help: Option<String>,
    ) -> ParseError {
        if self.quiet() {
            return ParseError;
        }
        let (span, found) = self.found_span();
        let mut d = Diagnostic::error(code, format!("expected {expected}, found {found}"), span)
            .with_label(format!("expected {expected}"));
        if let Some(help) = help {
            d = d.with_help(help);
        }
        self.report(d);
        ParseError
    }

    fn expect(&mut self, kind: TokenKind) -> PResult<Token> {
        match self.eat(kind) {
            Some(tok) => Ok(tok),
            None => Err(self.error_expected(&format!("`{}`", kind.text().unwrap_or("?")))),
        }
    }

    /// Expects an identifier and returns it.
    fn ident(&mut self, what: &str) -> PResult<ast::Ident> {
        let tok = self.peek();
        if tok.kind == TokenKind::Ident {
            self.bump();
            return Ok(self.ident_of(tok));
        }
        let help = tok.kind.is_keyword().then(|| {
            format!(
                "`{}` is a keyword and cannot be used as a name",
                self.snippet(tok.span)
            )
        });
        Err(self.error_expected_with(codes::EXPECTED, what, help))
    }

    fn ident_of(&self, tok: Token) -> ast::Ident {
        ast::Ident {
            name: self.snippet(tok.span).to_string(),
            span: tok.span,
        }
    }

    // ---- recovery -------------------------------------------------------------------------

    /// Skips to the end of the current statement: past a newline or `;` outside brackets, or up
    /// to (not past) a `}` that closes the enclosing block, `kernel`, or end of file. Whole
    /// `{ ... }` groups are skipped so a broken loop header does not leak its body.
    fn sync_stmt(&mut self) {
        let mut parens = 0u32;
        let mut braces = 0u32;
        loop {
            let kind = self.tokens[self.pos].kind;
            match kind {
                TokenKind::Eof | TokenKind::Kernel => return,
                TokenKind::RBrace if braces == 0 => return,
                TokenKind::RBrace => braces -= 1,
                TokenKind::LBrace => braces += 1,
                TokenKind::LParen | TokenKind::LBracket => parens += 1,
                TokenKind::RParen | TokenKind::RBracket => parens = parens.saturating_sub(1),
                TokenKind::Newline | TokenKind::Semi if parens == 0 && braces == 0 => {
                    self.pos += 1;
                    return;
                }
                _ => {}
            }
            self.pos += 1;
        }
    }

    /// Skips to the next `kernel` or an `@` outside braces (top-level recovery).
    fn sync_top(&mut self) {
        let mut braces = 0u32;
        loop {
            match self.tokens[self.pos].kind {
                TokenKind::Eof | TokenKind::Kernel => return,
                TokenKind::At if braces == 0 => return,
                TokenKind::LBrace => braces += 1,
                TokenKind::RBrace => braces = braces.saturating_sub(1),
                _ => {}
            }
            self.pos += 1;
        }
    }

    /// From the opening bracket at token index `open`, moves the cursor past its matching
    /// closer; stops at `kernel` or end of file when there is none. True when it was closed.
    fn skip_group_from(&mut self, open: usize) -> bool {
        let mut depth = 0u32;
        let mut i = open;
        let mut closed = false;
        loop {
            match self.tokens[i].kind {
                TokenKind::Eof | TokenKind::Kernel => break,
                TokenKind::LParen | TokenKind::LBracket | TokenKind::LBrace => depth += 1,
                TokenKind::RParen | TokenKind::RBracket | TokenKind::RBrace => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        i += 1;
                        closed = true;
                        break;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        if i > self.pos {
            self.pos = i;
            if let Some(tok) = self.tokens[..i]
                .iter()
                .rev()
                .find(|t| t.kind != TokenKind::Newline)
            {
                self.prev_hi = tok.span.hi;
            }
        }
        closed
    }
}
