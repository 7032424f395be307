//! Names in prose: where a text names a skill or an agent, by line.
//!
//! A name is matched as a whole word, the way triggers are (folded, case- and accent-insensitive,
//! never inside a longer word: `refunds` does not name `refund`), and never as part of a longer
//! name (`refund` is not named by `refund-policy`). A name of one word (no `-` or `_`) is also
//! an ordinary word of prose (`support`, `refund`), so it counts only where it is written as a
//! name: in backticks or quotes (`` `refund` ``, `"refund"`, `'refund'`), as `<name>refund</name>`,
//! or with its namespace (`skill:refund`, `agent:support`). Anything else would be a guess.

use skillbase_route::trigger::{TriggerMatcher, fold_for_matching};

/// A set of names, compiled once, found in texts line by line.
pub(crate) struct NameFinder {
    matcher: TriggerMatcher,
    /// The names, as given; a hit's `skill` indexes this.
    names: Vec<String>,
    /// Per name: whether it is one word, counted only where written as a name.
    plain: Vec<bool>,
    /// Per name: its length as matched (folded).
    lens: Vec<usize>,
    /// The namespace written before a name (`skill:` or `agent:`).
    prefix: &'static str,
}

/// Where a text names one of the names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Named {
    /// Index into the names the finder was built with.
    pub(crate) name: usize,
    /// The 1-based line of its first mention.
    pub(crate) line: u32,
}

/// Characters that continue a name: a name never matches inside a longer one.
fn continues_name(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

impl NameFinder {
    /// A finder of `names`, each written with `prefix` (`skill:`, `agent:`) as its namespace.
    pub(crate) fn new(names: Vec<String>, prefix: &'static str) -> NameFinder {
        let matcher = TriggerMatcher::new(names.iter().enumerate().map(|(i, n)| (i, n.as_str())));
        let plain = names.iter().map(|n| !n.contains(['-', '_'])).collect();
        let lens = names
            .iter()
            .map(|n| fold_for_matching(n.trim()).len())
            .collect();
        NameFinder {
            matcher,
            names,
            plain,
            lens,
            prefix,
        }
    }

    /// The name at `i`.
    pub(crate) fn name(&self, i: usize) -> &str {
        &self.names[i]
    }

    /// Every name `text` names, each once with the line of its first mention (line 1 of `text`
    /// being `first_line`), in order of that line.
    pub(crate) fn find(&self, text: &str, first_line: u32) -> Vec<Named> {
        let mut out: Vec<Named> = Vec::new();
        if self.names.is_empty() {
            return out;
        }
        for (n, line) in text.lines().enumerate() {
            let folded = fold_for_matching(line);
            for hit in self.matcher.every_folded(&folded) {
                if out.iter().any(|o| o.name == hit.skill) {
                    continue;
                }
                let end = hit.at + self.lens[hit.skill];
                if self.names_it(&folded, hit.at, end, self.plain[hit.skill]) {
                    out.push(Named {
                        name: hit.skill,
                        line: first_line.saturating_add(n as u32),
                    });
                }
            }
        }
        out.sort_by_key(|o| (o.line, o.name));
        out
    }

    /// Whether `line[start..end]` (a whole-word match of a name) names it: not inside a longer
    /// name, and for a one-word name, written as a name.
    fn names_it(&self, line: &str, start: usize, end: usize, plain: bool) -> bool {
        let (Some(head), Some(tail)) = (line.get(..start), line.get(end..)) else {
            return false;
        };
        let before = head.chars().next_back();
        let after = tail.chars().next();
        if before.is_some_and(continues_name) || after.is_some_and(continues_name) {
            return false;
        }
        if !plain {
            return true;
        }
        if head.ends_with(self.prefix) {
            return true;
        }
        if head.ends_with("<name>") && tail.starts_with("</name>") {
            return true;
        }
        matches!(
            (before, after),
            (Some('`'), Some('`')) | (Some('"'), Some('"')) | (Some('\''), Some('\''))
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(names: &[&str], text: &str) -> Vec<(String, u32)> {
        let f = NameFinder::new(names.iter().map(|n| (*n).to_owned()).collect(), "skill:");
        f.find(text, 1)
            .into_iter()
            .map(|n| (f.name(n.name).to_owned(), n.line))
            .collect()
    }

    #[test]
    fn compound_names_are_whole_words_anywhere() {
        assert_eq!(
            found(&["refund-policy"], "intro\nSee refund-policy, then act."),
            [("refund-policy".into(), 2)]
        );
        assert_eq!(
            found(&["refund-policy"], "Use the REFUND-POLICY tables"),
            [("refund-policy".into(), 1)]
        );
        // Not inside a longer name or word.
        for text in [
            "refund-policy-v2",
            "old-refund-policy",
            "refund-policyx",
            "refund_policy",
        ] {
            assert!(found(&["refund-policy"], text).is_empty(), "{text}");
        }
        // Once, at its first line.
        assert_eq!(found(&["a-b"], "x\na-b\na-b"), [("a-b".into(), 2)]);
    }

    #[test]
    fn one_word_names_count_only_where_written_as_names() {
        for text in [
            "Process the refund.",
            "refunds are slow",
            "a refund-policy table",
            "support the customer",
        ] {
            assert!(found(&["refund", "support"], text).is_empty(), "{text}");
        }
        for text in [
            "load `refund` first",
            "load_skill(\"refund\")",
            "use 'refund'",
            "<skill><name>refund</name></skill>",
            "call skill:refund",
        ] {
            assert_eq!(found(&["refund"], text), [("refund".into(), 1)], "{text}");
        }
        // The quotes must close on the name itself.
        assert!(found(&["refund"], "`refund policy`").is_empty());
    }

    #[test]
    fn accents_case_and_every_name_in_line_order() {
        assert_eq!(
            found(&["café-menu", "b-c"], "first b-c\nthen CAFÉ-MENU and b-c"),
            [("b-c".into(), 1), ("café-menu".into(), 2)]
        );
        assert!(found(&[], "anything").is_empty());
    }
}
