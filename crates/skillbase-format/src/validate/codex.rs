//! Codex's `agents/openai.yaml` ([`crate::openai_yaml`]) as diagnostics of the skill.

use super::{Diagnostic, Severity, ValidateOptions};
use crate::openai_yaml::{self, PATH};
use crate::skill_dir::ReadError;
use std::path::Path;

/// The diagnostics of a skill's `agents/openai.yaml`, from its bytes: errors for what cannot be
/// read (it names the file and the key), warnings for what does not map onto Skillbase's keys.
pub fn codex_diagnostics(bytes: &[u8], opts: &ValidateOptions) -> Vec<Diagnostic> {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            return vec![whole(format!(
                "{PATH} is not valid UTF-8 (invalid byte at offset {}); save it as UTF-8 text",
                e.valid_up_to()
            ))];
        }
    };
    let (_, notes) = openai_yaml::read(text, &opts.yaml);
    notes
        .into_iter()
        .map(|n| Diagnostic {
            severity: if n.error {
                Severity::Error
            } else {
                Severity::Warning
            },
            file: PATH.to_owned(),
            field: (!n.key.is_empty()).then_some(n.key),
            line: n.line,
            message: n.message,
            hint: Some(n.hint.to_owned()),
        })
        .collect()
}

/// The diagnostics of `dir/agents/openai.yaml` on disk, if the file is there: a link or a file
/// over the YAML size limit is refused without being read.
pub(super) fn codex_dir_diagnostics(dir: &Path, opts: &ValidateOptions) -> Vec<Diagnostic> {
    let path = dir.join(PATH);
    let Ok(meta) = std::fs::symlink_metadata(&path) else {
        return Vec::new();
    };
    if meta.file_type().is_symlink() || !meta.is_file() {
        return vec![whole(format!(
            "{PATH} is not a plain file (a link or a folder); it is not read"
        ))];
    }
    match crate::skill_dir::read_text_file(&path, opts.yaml.max_bytes as u64) {
        Ok(text) => codex_diagnostics(text.as_bytes(), opts),
        Err(ReadError::TooLarge { size, limit, .. }) => vec![whole(format!(
            "{PATH} is {size} bytes, over the {limit}-byte limit"
        ))],
        Err(ReadError::NotUtf8 { offset, .. }) => vec![whole(format!(
            "{PATH} is not valid UTF-8 (invalid byte at offset {offset}); save it as UTF-8 text"
        ))],
        Err(e) => vec![whole(format!("cannot read {PATH}: {e}"))],
    }
}

fn whole(message: String) -> Diagnostic {
    Diagnostic {
        severity: Severity::Error,
        file: PATH.to_owned(),
        field: None,
        line: None,
        message,
        hint: Some("keep agents/openai.yaml a short YAML file (Codex's display metadata, dependencies and policy)".into()),
    }
}
