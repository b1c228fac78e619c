//! One module per `phobos` subcommand.

pub mod check;
pub mod emit;
pub mod run;
pub mod space;

/// `M=64,N=48` (commas or spaces) as name/value pairs; the error names the item that is not of
/// the form `NAME=INTEGER`.
pub(crate) fn parse_dims(text: &str) -> Result<Vec<(String, i64)>, String> {
    let mut out = Vec::new();
    for item in text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
    {
        let parsed = item
            .split_once('=')
            .and_then(|(n, v)| Some((n.trim(), v.trim().parse::<i64>().ok()?)))
            .filter(|(n, _)| !n.is_empty());
        let Some((name, value)) = parsed else {
            return Err(format!(
                "`{item}` in --dims is not of the form NAME=INTEGER"
            ));
        };
        out.push((name.to_string(), value));
    }
    Ok(out)
}
