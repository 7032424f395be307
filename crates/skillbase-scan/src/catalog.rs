//! The rules written as code (what needs reasoning rather than a pattern): their ids, families,
//! why and fix, in one table, so reports, SARIF and the rules digest name them like the pattern
//! rules.

use crate::finding::Family;

/// A rule implemented in code.
#[derive(Debug, Clone, Copy)]
pub struct CodeRule {
    /// Unique id, `family-what`.
    pub id: &'static str,
    /// Its family.
    pub family: Family,
    /// Why it matters.
    pub why: &'static str,
    /// What to do.
    pub fix: &'static str,
}

/// Bumped whenever a code rule's logic changes, so the rules digest changes and stores rescan.
pub const CODE_RULES_VERSION: u32 = 1;

macro_rules! rule {
    ($id:literal, $family:ident, $why:literal, $fix:literal) => {
        CodeRule {
            id: $id,
            family: Family::$family,
            why: $why,
            fix: $fix,
        }
    };
}

/// `hidden-unicode-tags`.
pub(crate) const HIDDEN_UNICODE_TAGS: CodeRule = rule!(
    "hidden-unicode-tags",
    Hidden,
    "Unicode tag characters (U+E0000-E007F) are invisible to people but read by models: they carry text no reviewer sees.",
    "Remove every tag character."
);

/// `hidden-zero-width`.
pub(crate) const HIDDEN_ZERO_WIDTH: CodeRule = rule!(
    "hidden-zero-width",
    Hidden,
    "Runs of zero-width characters hide data or split words so that readers and scanners miss them.",
    "Remove the zero-width characters."
);

/// `hidden-bidi`.
pub(crate) const HIDDEN_BIDI: CodeRule = rule!(
    "hidden-bidi",
    Hidden,
    "Bidirectional overrides outside right-to-left text reorder what is displayed, so the text read differs from the text seen (Trojan Source).",
    "Remove the override characters; right-to-left text does not need them."
);

/// `hidden-instructions`.
pub(crate) const HIDDEN_INSTRUCTIONS: CodeRule = rule!(
    "hidden-instructions",
    Hidden,
    "Instructions in an HTML comment or an invisible element reach the model but not the person reviewing the skill.",
    "Move the text into the visible body, or remove it."
);

/// `hidden-homoglyph-host`.
pub(crate) const HIDDEN_HOMOGLYPH_HOST: CodeRule = rule!(
    "hidden-homoglyph-host",
    Hidden,
    "A host name mixing Latin letters with lookalike Cyrillic or Greek ones imitates a known host.",
    "Use the real host name, in ASCII."
);

/// `hidden-punycode-host`.
pub(crate) const HIDDEN_PUNYCODE_HOST: CodeRule = rule!(
    "hidden-punycode-host",
    Hidden,
    "A punycode (`xn--`) host name may display as a lookalike of a known host.",
    "Check the host; prefer its ASCII name."
);

/// `hidden-long-line`.
pub(crate) const HIDDEN_LONG_LINE: CodeRule = rule!(
    "hidden-long-line",
    Hidden,
    "A very long line in Markdown pushes text out of a reviewer's view.",
    "Wrap the line, or move data into a file of its own."
);

/// `exfiltration-source-sink`.
pub(crate) const EXFILTRATION_SOURCE_SINK: CodeRule = rule!(
    "exfiltration-source-sink",
    Exfiltration,
    "A script that reads key files, browser data or the whole environment and also sends data over the network is a credential stealer's shape.",
    "Remove the read of secrets; use vault entries declared in `capabilities.vault`."
);

/// `dropper-typosquat`.
pub(crate) const DROPPER_TYPOSQUAT: CodeRule = rule!(
    "dropper-typosquat",
    Dropper,
    "A package whose name is one edit from a popular one is how typosquatting delivers malware.",
    "Install the package by its real name."
);

/// `dropper-executable`.
pub(crate) const DROPPER_EXECUTABLE: CodeRule = rule!(
    "dropper-executable",
    Dropper,
    "A compiled executable in a skill cannot be read or reviewed, and runs with the agent's rights.",
    "Ship source the agent can read, or let the user install the program."
);

/// `dropper-encrypted-archive`.
pub(crate) const DROPPER_ENCRYPTED_ARCHIVE: CodeRule = rule!(
    "dropper-encrypted-archive",
    Dropper,
    "An encrypted (password-protected) archive is opaque to every scanner; droppers ship their payload that way.",
    "Ship the files unarchived in the bundle."
);

/// `dropper-archive`.
pub(crate) const DROPPER_ARCHIVE: CodeRule = rule!(
    "dropper-archive",
    Dropper,
    "Archives are not expanded by the scanner, so what they hold is unread.",
    "Ship the files unarchived in the bundle."
);

/// `envelope-undeclared-host`.
pub(crate) const ENVELOPE_UNDECLARED_HOST: CodeRule = rule!(
    "envelope-undeclared-host",
    Envelope,
    "The skill declares its hosts but its scripts or commands reach another one: what it says it does is not what it does.",
    "Declare the host in `capabilities.hosts`, or remove the call."
);

/// `envelope-undeclared-vault`.
pub(crate) const ENVELOPE_UNDECLARED_VAULT: CodeRule = rule!(
    "envelope-undeclared-vault",
    Envelope,
    "The skill uses a vault entry it does not declare in `capabilities.vault`: a reach for secrets beyond its envelope.",
    "Declare the entry, or remove its use."
);

/// `envelope-undeclared-tool`.
pub(crate) const ENVELOPE_UNDECLARED_TOOL: CodeRule = rule!(
    "envelope-undeclared-tool",
    Envelope,
    "The skill's body calls a tool whose class its `capabilities.tools` do not declare; every such call will be refused.",
    "Declare the class, or remove the call."
);

/// `envelope-wide-shell`.
pub(crate) const ENVELOPE_WIDE_SHELL: CodeRule = rule!(
    "envelope-wide-shell",
    Envelope,
    "A skill whose task is text asks for an unrestricted shell: far more reach than the task needs.",
    "Narrow `allowed-tools` (e.g. `Bash(git:*)`) or drop it."
);

/// `routing-keyword-stuffing`.
pub(crate) const ROUTING_KEYWORD_STUFFING: CodeRule = rule!(
    "routing-keyword-stuffing",
    Routing,
    "A description stuffed with keywords wins routing for requests it does not serve and crowds out the skills that do.",
    "Describe the task in a sentence or two; put phrases in `triggers`."
);

/// `routing-name-imitation`.
pub(crate) const ROUTING_NAME_IMITATION: CodeRule = rule!(
    "routing-name-imitation",
    Routing,
    "A name one edit from another skill of the store imitates it, so requests meant for that skill reach this one.",
    "Choose a distinct name."
);

/// `unread-binary`.
pub(crate) const UNREAD_BINARY: CodeRule = rule!(
    "unread-binary",
    Unread,
    "A binary file of unknown type was not read: an unreadable file is not a clean file.",
    "Remove the file, or ship it as text."
);

/// `unread-media`.
pub(crate) const UNREAD_MEDIA: CodeRule = rule!(
    "unread-media",
    Unread,
    "An image, font or document file is not text and was not read.",
    "Nothing, if the file is what its name says."
);

/// `unread-too-large`.
pub(crate) const UNREAD_TOO_LARGE: CodeRule = rule!(
    "unread-too-large",
    Unread,
    "The file is larger than the scanner reads; the rest is unread.",
    "Split the file, or keep large data out of skills."
);

/// `unread-too-many`.
pub(crate) const UNREAD_TOO_MANY: CodeRule = rule!(
    "unread-too-many",
    Unread,
    "The bundle has more files, or more bytes, than the scanner reads; the rest is unread.",
    "Keep skills small."
);

/// `unread-time`.
pub(crate) const UNREAD_TIME: CodeRule = rule!(
    "unread-time",
    Unread,
    "The scan ran out of time; the rest is unread.",
    "Keep skills small."
);

/// `unread-invalid-utf8`.
pub(crate) const UNREAD_INVALID_UTF8: CodeRule = rule!(
    "unread-invalid-utf8",
    Unread,
    "The file is not valid UTF-8; invalid bytes were read as replacement characters.",
    "Save the file as UTF-8."
);

/// `unread-file`.
pub(crate) const UNREAD_FILE: CodeRule = rule!(
    "unread-file",
    Unread,
    "A file of the bundle could not be read (a link, a permission error, a read error).",
    "Replace links with the files they point to; make every file readable."
);

/// Every code rule.
pub const CODE_RULES: &[CodeRule] = &[
    HIDDEN_UNICODE_TAGS,
    HIDDEN_ZERO_WIDTH,
    HIDDEN_BIDI,
    HIDDEN_INSTRUCTIONS,
    HIDDEN_HOMOGLYPH_HOST,
    HIDDEN_PUNYCODE_HOST,
    HIDDEN_LONG_LINE,
    EXFILTRATION_SOURCE_SINK,
    DROPPER_TYPOSQUAT,
    DROPPER_EXECUTABLE,
    DROPPER_ENCRYPTED_ARCHIVE,
    DROPPER_ARCHIVE,
    ENVELOPE_UNDECLARED_HOST,
    ENVELOPE_UNDECLARED_VAULT,
    ENVELOPE_UNDECLARED_TOOL,
    ENVELOPE_WIDE_SHELL,
    ROUTING_KEYWORD_STUFFING,
    ROUTING_NAME_IMITATION,
    UNREAD_BINARY,
    UNREAD_MEDIA,
    UNREAD_TOO_LARGE,
    UNREAD_TOO_MANY,
    UNREAD_TIME,
    UNREAD_INVALID_UTF8,
    UNREAD_FILE,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_start_with_their_family() {
        let mut ids: Vec<_> = CODE_RULES.iter().map(|r| r.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), CODE_RULES.len());
        for r in CODE_RULES {
            assert!(r.id.starts_with(r.family.as_str()), "{}", r.id);
        }
    }
}
