//! "Did you mean" suggestions by edit distance.

/// Edit distance (insert, delete, substitute, swap two neighbours), case-insensitive.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j - 1] + cost)
                .min(d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// The closest candidate within a third of the name's length (at least 1 edit), if any.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| (distance(name, c), c))
        // Keep at least one character in common: `K` is not a typo of `M`.
        .filter(|&(d, _)| d <= limit && d < name.chars().count())
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// `did you mean `x`?` or nothing.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    closest(name, candidates).map(|c| format!("did you mean `{c}`?"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_close_names_only() {
        assert_eq!(closest("TILE_N", ["TILE_M", "K"]), Some("TILE_M"));
        assert_eq!(closest("acc", ["acd", "ac"]), Some("acd"));
        assert_eq!(closest("rowsun", ["rowsum", "rowmax"]), Some("rowsum"));
        assert_eq!(closest("x", ["banana"]), None);
        assert_eq!(closest("f23", ["f32", "f16"]), Some("f32"));
        assert_eq!(closest("same", ["same"]), None);
        assert_eq!(closest("K", ["M", "N"]), None);
    }
}
