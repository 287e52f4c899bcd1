//! The column layout of `show --side-by-side` and of the report's linked
//! listings: listings side by side, cut or fitted to a width.

/// Lays `columns` (header, lines) out side by side, each `width` characters
/// wide (longer lines are cut with `…`), separated by ` │ `.
pub fn side_by_side(columns: &[(String, Vec<String>)], width: usize) -> String {
    let widths = vec![width; columns.len()];
    side_by_side_widths(columns, &widths)
}

/// Like [`side_by_side`], each column as wide as its longest line (header
/// included), so nothing is cut.
pub fn side_by_side_fit(columns: &[(String, Vec<String>)]) -> String {
    let widths: Vec<usize> = columns
        .iter()
        .map(|(h, l)| {
            std::iter::once(h)
                .chain(l)
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
                .max(2)
        })
        .collect();
    side_by_side_widths(columns, &widths)
}

/// Lays `columns` out side by side, column `i` `widths[i]` characters wide
/// (longer lines are cut with `…`), separated by ` │ `.
fn side_by_side_widths(columns: &[(String, Vec<String>)], widths: &[usize]) -> String {
    let fit = |s: &str, width: usize| {
        let n = s.chars().count();
        if n > width {
            let mut t: String = s.chars().take(width - 1).collect();
            t.push('…');
            t
        } else {
            format!("{s}{}", " ".repeat(width - n))
        }
    };
    let rows = columns.iter().map(|(_, l)| l.len()).max().unwrap_or(0);
    let mut out = String::new();
    let row = |cells: Vec<String>| {
        let mut line = cells.join(" │ ");
        line.truncate(line.trim_end().len());
        line.push('\n');
        line
    };
    out.push_str(&row(columns
        .iter()
        .zip(widths)
        .map(|((h, _), &w)| fit(h, w))
        .collect()));
    out.push_str(&row(widths.iter().map(|&w| "─".repeat(w)).collect()));
    for i in 0..rows {
        out.push_str(&row(columns
            .iter()
            .zip(widths)
            .map(|((_, l), &w)| fit(l.get(i).map_or("", String::as_str), w))
            .collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align() {
        let cols = vec![
            ("a".to_string(), vec!["x".to_string(), "yy".to_string()]),
            ("b".to_string(), vec!["a very long line indeed".to_string()]),
        ];
        let s = side_by_side(&cols, 6);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "a      │ b");
        assert_eq!(lines[2], "x      │ a ver…");
        assert_eq!(lines[3], "yy     │");
        let fit = side_by_side_fit(&cols);
        let lines: Vec<&str> = fit.lines().collect();
        assert_eq!(lines[0], "a  │ b");
        assert_eq!(lines[2], "x  │ a very long line indeed", "nothing is cut");
        assert_eq!(lines[3], "yy │");
    }
}
