//! How a message is read by the semantic and rerank stages: cut to a length, as passages when it
//! is long, and whether it is English (which encoder, and whether the reranker reads it). A
//! leaf: the stages both depend on it.

/// Characters of a message that are embedded (the start of a pasted task says what it is).
pub const MAX_QUERY_CHARS: usize = 4_000;

/// A message cut to what is embedded: at most [`MAX_QUERY_CHARS`] characters, at a word.
pub fn query_text(message: &str) -> String {
    let mut end = message.len();
    if let Some((i, _)) = message.char_indices().nth(MAX_QUERY_CHARS) {
        end = message[..i].rfind(char::is_whitespace).unwrap_or(i);
    }
    message[..end].trim().to_owned()
}

/// The texts a message is embedded as (`skillbase_route::passage::reading`): a short message
/// whole, a long one as [`query_text`] of each of its passages of prose (one passage too: a
/// pasted trace, then the question, is read as the question), a long one without prose by its
/// start ([`query_text`]), a blank one as the empty text.
pub fn query_passages(message: &str) -> Vec<String> {
    use skillbase_route::passage::{Reading, reading};
    match reading(message) {
        Reading::Passages(p) => p.into_iter().map(query_text).collect(),
        Reading::Blank | Reading::Whole(_) | Reading::NoProse => vec![query_text(message)],
    }
}

/// Whether a message goes to the English model: unless it is written in a non-Latin script, or
/// another language's stopwords and accented words outnumber English stopwords among its first
/// words. Deterministic, a few microseconds.
pub fn reads_as_english(text: &str) -> bool {
    let head: String = text.chars().take(2_000).collect();
    let (mut letters, mut other_script) = (0usize, 0usize);
    for c in head.chars().filter(|c| c.is_alphabetic()) {
        letters += 1;
        // Latin letters end at U+024F (Latin Extended-B); U+1E00-U+1EFF are Latin too.
        if c as u32 > 0x024F && !(0x1E00..=0x1EFF).contains(&(c as u32)) {
            other_script += 1;
        }
    }
    if other_script * 4 > letters {
        return false;
    }
    let accented = head
        .split(|c: char| !c.is_alphabetic())
        .filter(|w| !w.is_ascii())
        .take(200)
        .count();
    let folded = skillbase_route::trigger::fold_fast(&head);
    let (english, other) =
        skillbase_route::lang::stopword_hits(skillbase_route::rank::words(&folded), 200);
    other + accented <= english
}

/// What both stages read first of a skill: its name in words, `: `, its description and its
/// `when_to_use` entries (each ` Use when …`), with room for `more` bytes after.
pub fn skill_head(entry: &skillbase_store::SkillEntry, more: usize) -> String {
    let m = &entry.meta;
    let mut out = String::with_capacity(m.description.len() + more);
    out.push_str(&entry.name.replace(['-', '_'], " "));
    out.push_str(": ");
    out.push_str(&m.description);
    for w in &m.when_to_use {
        out.push_str(" Use when ");
        out.push_str(w);
        out.push('.');
    }
    out
}
