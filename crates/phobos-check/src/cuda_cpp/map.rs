//! The Phobos text made from a CUDA C++ file's attribute comments, and the way back: every
//! span of the made text maps to the `.cu` bytes it was copied from, so diagnostics point into
//! the `.cu` file.

use phobos_syntax::{Diagnostic, Span};

/// Text built piece by piece, each piece remembering where it came from.
#[derive(Clone, Debug, Default)]
pub struct Built {
    pub text: String,
    /// (start in `text`, end in `text`, start in the `.cu` file) of each copied piece.
    copied: Vec<(usize, usize, usize)>,
    /// (start, end, the `.cu` span standing for it) of each piece written by the builder.
    written: Vec<(usize, usize, Span)>,
}

impl Built {
    /// Appends text copied from the `.cu` file at `origin`.
    pub fn copy(&mut self, text: &str, origin: usize) {
        let lo = self.text.len();
        self.text.push_str(text);
        self.copied.push((lo, self.text.len(), origin));
    }

    /// Appends text of the builder's own; a span inside it maps to `stands_for`.
    pub fn write(&mut self, text: &str, stands_for: Span) {
        let lo = self.text.len();
        self.text.push_str(text);
        self.written.push((lo, self.text.len(), stands_for));
    }

    /// The `.cu` span of a span of the built text.
    pub fn map(&self, span: Span) -> Span {
        let (lo, hi) = (span.lo as usize, span.hi as usize);
        if let Some(&(s, e, o)) = self.copied.iter().find(|&&(s, e, _)| s <= lo && lo < e) {
            let end = hi.clamp(lo, e);
            return Span::new(o + lo - s, o + end - s);
        }
        if let Some(&(_, _, to)) = self
            .written
            .iter()
            .find(|&&(s, e, _)| s <= lo && lo < e.max(s + 1))
        {
            return to;
        }
        // Past the end (an unclosed delimiter): the last piece's end.
        match self.copied.last() {
            Some(&(s, e, o)) => Span::new(o + e - s, o + e - s),
            None => Span::default(),
        }
    }

    /// A diagnostic of the built text, pointing into the `.cu` file.
    pub fn remap(&self, mut d: Diagnostic) -> Diagnostic {
        d.primary.span = self.map(d.primary.span);
        for l in &mut d.secondary {
            l.span = self.map(l.span);
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_map_back_to_their_origin() {
        let mut b = Built::default();
        b.copy("@launch(B)", 100);
        b.write("\nkernel ", Span::new(7, 9));
        b.copy("k", 50);
        assert_eq!(b.map(Span::new(1, 7)), Span::new(101, 107));
        assert_eq!(b.map(Span::new(12, 13)), Span::new(7, 9));
        assert_eq!(b.map(Span::new(18, 19)), Span::new(50, 51));
        // A span running past its piece is cut at the piece's end.
        assert_eq!(b.map(Span::new(8, 30)), Span::new(108, 110));
    }
}
