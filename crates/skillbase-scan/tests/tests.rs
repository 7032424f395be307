//! The scanner's integration tests: every rule's fixtures, the labelled corpus (`eval/scan/`),
//! the bundled examples, and hostile input to the scanner itself.

mod corpus;
mod examples;
mod hostile;
mod rules;

/// A SKILL.md around `body`.
pub fn skill(body: &str) -> String {
    format!("---\nname: fixture\ndescription: A fixture skill.\n---\n\n{body}\n")
}
