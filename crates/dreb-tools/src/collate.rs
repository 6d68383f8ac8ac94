//! An approximation of the reference's `localeCompare` ordering (ICU root collation) for file names:
//! case-insensitive, whitespace and punctuation before digits before letters, punctuation in ICU's order.

use std::cmp::Ordering;

const PUNCT_ORDER: &str = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$";

fn rank(c: char) -> (u8, u32) {
    if c.is_whitespace() {
        (0, c as u32)
    } else if let Some(i) = PUNCT_ORDER.find(c) {
        (1, i as u32)
    } else if c.is_ascii_digit() {
        (2, c as u32)
    } else if c.is_alphabetic() {
        (3, c as u32)
    } else {
        (1, 1000 + c as u32)
    }
}

/// Compare two names the way `a.toLowerCase().localeCompare(b.toLowerCase())` orders them for common names.
pub fn compare_names(a: &str, b: &str) -> Ordering {
    let (la, lb) = (a.to_lowercase(), b.to_lowercase());
    let mut ia = la.chars();
    let mut ib = lb.chars();
    loop {
        match (ia.next(), ib.next()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => match rank(x).cmp(&rank(y)) {
                Ordering::Equal => continue,
                other => return other,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_like_locale_compare() {
        let mut v = vec!["b", "A", ".hidden", "_x", "10", "a-b", "a_b", "C.txt"];
        v.sort_by(|a, b| compare_names(a, b));
        assert_eq!(
            v,
            vec!["_x", ".hidden", "10", "A", "a_b", "a-b", "b", "C.txt"]
        );
    }
}
