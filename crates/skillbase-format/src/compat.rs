//! Which agent reads, ignores or rejects which key: the README's compatibility tables, as data
//! (the README is checked against [`readme_keys_table`] and [`readme_targets_table`]), and
//! [`portable_dir`], which says per agent what it would reject or ignore of one skill
//! (`skillbase validate --portable`).

use crate::frontmatter::SkillMd;
use crate::validate::{Profile, ValidateOptions, validate_dir};
use serde::Serialize;
use std::fmt;
use std::path::Path;
use std::str::FromStr;

/// An agent a skill may be carried to, or the strict reference validator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(into = "&'static str")]
pub enum Target {
    /// Anthropic's Claude Code.
    ClaudeCode,
    /// OpenAI's Codex.
    Codex,
    /// Google's gemini-cli.
    GeminiCli,
    /// GitHub Copilot.
    Copilot,
    /// Cursor.
    Cursor,
    /// OpenCode.
    OpenCode,
    /// The Agent Skills reference validator (`skills-ref validate`), strict about keys.
    SkillsRef,
}

impl Target {
    /// Every target, in the tables' column order.
    pub const ALL: [Target; 7] = [
        Target::ClaudeCode,
        Target::Codex,
        Target::GeminiCli,
        Target::Copilot,
        Target::Cursor,
        Target::OpenCode,
        Target::SkillsRef,
    ];

    /// The id written on the command line: `claude-code`, `codex`, `gemini-cli`, `copilot`,
    /// `cursor`, `opencode`, `skills-ref`.
    pub fn id(self) -> &'static str {
        match self {
            Target::ClaudeCode => "claude-code",
            Target::Codex => "codex",
            Target::GeminiCli => "gemini-cli",
            Target::Copilot => "copilot",
            Target::Cursor => "cursor",
            Target::OpenCode => "opencode",
            Target::SkillsRef => "skills-ref",
        }
    }

    /// The name people know it by.
    pub fn label(self) -> &'static str {
        match self {
            Target::ClaudeCode => "Claude Code",
            Target::Codex => "Codex",
            Target::GeminiCli => "gemini-cli",
            Target::Copilot => "Copilot",
            Target::Cursor => "Cursor",
            Target::OpenCode => "OpenCode",
            Target::SkillsRef => "skills-ref",
        }
    }

    fn column(self) -> usize {
        Target::ALL.iter().position(|t| *t == self).unwrap_or(0)
    }
}

impl From<Target> for &'static str {
    fn from(t: Target) -> &'static str {
        t.id()
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl FromStr for Target {
    type Err = String;
    fn from_str(s: &str) -> Result<Target, String> {
        Target::ALL
            .into_iter()
            .find(|t| t.id() == s.trim())
            .ok_or_else(|| {
                let ids: Vec<&str> = Target::ALL.iter().map(|t| t.id()).collect();
                let shown: String = s.chars().filter(|c| !c.is_control()).take(40).collect();
                format!("unknown agent target '{shown}': use {}", ids.join(", "))
            })
    }
}

/// What an agent does with a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Treatment {
    /// It reads the key (or accepts it as part of the specification).
    Reads,
    /// It loads the skill and does nothing with the key.
    Ignores,
    /// It refuses the skill.
    Rejects,
}

impl Treatment {
    fn cell(self) -> &'static str {
        match self {
            Treatment::Reads => "reads",
            Treatment::Ignores => "ignores",
            Treatment::Rejects => "**rejects**",
        }
    }
}

/// One row of the tables: keys that every agent treats alike.
#[derive(Debug, Clone, Copy)]
pub struct KeyRow {
    /// The keys (top-level frontmatter keys, or a file such as `agents/openai.yaml`).
    pub keys: &'static [&'static str],
    /// Who defines them.
    pub defined_by: &'static str,
    /// What Skillbase does with them.
    pub skillbase: &'static str,
    /// What each target does, in [`Target::ALL`]'s order.
    pub targets: [Treatment; 7],
}

use Treatment::{Ignores as I, Reads as R, Rejects as X};

/// A key only Claude Code reads, which the reference refuses.
const CLAUDE_ONLY: [Treatment; 7] = [R, I, I, I, I, I, X];

/// Every key the main agents define, and Skillbase's own, from each agent's documentation
/// (read in December 2026). A key in no row is treated as Skillbase's own keys are.
pub const KEYS: &[KeyRow] = &[
    KeyRow {
        keys: &["name", "description"],
        defined_by: "the specification; every agent",
        skillbase: "required, validated as the reference does",
        targets: [R; 7],
    },
    KeyRow {
        keys: &["license", "compatibility", "metadata"],
        defined_by: "the specification; Claude Code, gemini-cli, Copilot, Cursor, OpenCode",
        skillbase: "kept; `metadata.skillbase.*` holds Skillbase's keys",
        targets: [R, I, R, R, R, R, R],
    },
    KeyRow {
        keys: &["allowed-tools"],
        defined_by: "the specification; Claude Code (`Bash(git:*) Read WebFetch(domain:x)`), Copilot (`shell(git:*)`)",
        skillbase: "read into declared capabilities where it maps: `WebFetch` → tool class `web_fetch`, `domain:x` → host `x`; the harness's own file and shell tools (`Read`, `Bash(git:*)`) are left to the harness, never a grant, and not warned about; an `mcp__…` tool, a malformed entry or a `domain:` that is not a host is a validation warning (declare the class under `capabilities.tools`)",
        targets: [R, I, I, R, I, I, R],
    },
    KeyRow {
        keys: &["disable-model-invocation"],
        defined_by: "Claude Code, Cursor",
        skillbase: "honoured: only an explicit invocation places the skill (above)",
        targets: [R, I, I, I, R, I, X],
    },
    KeyRow {
        keys: &["user-invocable"],
        defined_by: "Claude Code",
        skillbase: "honoured: `false` refuses an explicit invocation; the model may still use the skill",
        targets: CLAUDE_ONLY,
    },
    KeyRow {
        keys: &["paths"],
        defined_by: "Claude Code",
        skillbase: "honoured: globs (`*`, `**`, `?`, `[a-z]`, `{a,b}`; at most 32 of 256 characters) activating the skill on the turn's paths, reason `path:<glob>`",
        targets: CLAUDE_ONLY,
    },
    KeyRow {
        keys: &["argument-hint"],
        defined_by: "Claude Code",
        skillbase: "kept (what to type after `/name`, for people); at most 200 characters",
        targets: CLAUDE_ONLY,
    },
    KeyRow {
        keys: &["arguments"],
        defined_by: "Claude Code",
        skillbase: "honoured: names for the positional arguments of an explicit invocation (`$env`); at most 16; they map onto `inputs` as below",
        targets: CLAUDE_ONLY,
    },
    KeyRow {
        keys: &["model"],
        defined_by: "Claude Code",
        skillbase: "accepted, ignored: the harness picks the model",
        targets: CLAUDE_ONLY,
    },
    KeyRow {
        keys: &["context", "agent"],
        defined_by: "Claude Code (`context: fork` runs the skill in a subagent)",
        skillbase: "accepted, ignored: Skillbase places bodies in the turn; forking is the harness's",
        targets: CLAUDE_ONLY,
    },
    KeyRow {
        keys: &["hooks"],
        defined_by: "Claude Code",
        skillbase: "accepted, **never run**: Skillbase runs nothing a skill ships, and a hook is a command",
        targets: CLAUDE_ONLY,
    },
    KeyRow {
        keys: &[crate::openai_yaml::PATH],
        defined_by: "Codex (a file beside SKILL.md: display name, icon, `allow_implicit_invocation`, tool dependencies)",
        skillbase: "read: `policy.allow_implicit_invocation: false` as `disable-model-invocation: true`; an `mcp` dependency as `requires.mcp`; `interface` kept as display metadata; a dependency's `transport` and `url`, another `type`, an unknown key are warnings; a malformed file is an error naming the key",
        targets: [I, R, I, I, I, I, I],
    },
    KeyRow {
        keys: &crate::keys::SKILLBASE_KEYS,
        defined_by: "Skillbase",
        skillbase: "see above; ignored by the other agents",
        targets: [I, I, I, I, I, I, X],
    },
];

/// The row of a key; keys in no row (unknown ones) read as Skillbase's own keys' row does.
pub fn row_of(key: &str) -> &'static KeyRow {
    KEYS.iter()
        .find(|r| r.keys.contains(&key))
        .unwrap_or(&KEYS[KEYS.len() - 1])
}

fn keys_cell(keys: &[&str]) -> String {
    keys.iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The README's table of keys: who defines each and what Skillbase does with it.
pub fn readme_keys_table() -> String {
    let mut out = String::from("| key | defined by | what Skillbase does |\n| --- | --- | --- |\n");
    for r in KEYS {
        out.push_str(&format!(
            "| {} | {} | {} |\n",
            keys_cell(r.keys),
            r.defined_by,
            r.skillbase
        ));
    }
    out
}

/// The README's table of what each agent does with each key (`validate --portable` reads it).
pub fn readme_targets_table() -> String {
    let mut out = String::from("| key |");
    for t in Target::ALL {
        out.push_str(&format!(" {} |", t.label()));
    }
    out.push_str("\n| --- |");
    out.push_str(&" --- |".repeat(Target::ALL.len()));
    out.push('\n');
    for r in KEYS {
        out.push_str(&format!("| {} |", keys_cell(r.keys)));
        for t in r.targets {
            out.push_str(&format!(" {} |", t.cell()));
        }
        out.push('\n');
    }
    out
}

/// What one target would do with one skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// The agent.
    pub target: Target,
    /// Why it would refuse the skill (keys, or the reference's messages); empty when it loads it.
    pub rejects: Vec<String>,
    /// The skill's keys (and files) it loads but does nothing with.
    pub ignores: Vec<String>,
}

/// What each of `targets` would reject or ignore of the skill in `dir`. The reference validator
/// is run as it is (`Profile::Spec`), so its verdict is its own; for the agents, each
/// frontmatter key (and Codex's file) is looked up in [`KEYS`]. A SKILL.md that cannot be read
/// is rejected by every target.
pub fn portable_dir(dir: &Path, targets: &[Target], opts: &ValidateOptions) -> Vec<Verdict> {
    let read = crate::skill_dir::read_skill_md(dir, opts.max_skill_md_bytes)
        .map_err(|e| e.to_string())
        .and_then(|(_, text)| SkillMd::parse(&text, &opts.yaml).map_err(|e| e.to_string()));
    let mut keys: Vec<String> = match &read {
        Ok(md) => md.frontmatter.keys().map(str::to_owned).collect(),
        Err(_) => Vec::new(),
    };
    if std::fs::symlink_metadata(dir.join(crate::openai_yaml::PATH)).is_ok() {
        keys.push(crate::openai_yaml::PATH.to_owned());
    }
    targets
        .iter()
        .map(|&target| {
            let mut v = Verdict {
                target,
                rejects: Vec::new(),
                ignores: Vec::new(),
            };
            if let Err(e) = &read {
                v.rejects.push(e.clone());
                return v;
            }
            for k in &keys {
                match row_of(k).targets[target.column()] {
                    Treatment::Reads => {}
                    Treatment::Ignores => v.ignores.push(k.clone()),
                    Treatment::Rejects if target == Target::SkillsRef => {}
                    Treatment::Rejects => v.rejects.push(k.clone()),
                }
            }
            if target == Target::SkillsRef {
                let spec = ValidateOptions {
                    profile: Profile::Spec,
                    ..*opts
                };
                v.rejects = validate_dir(dir, &spec)
                    .errors()
                    .map(|d| d.message.clone())
                    .collect();
            }
            v
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_skillbase_knows_is_in_one_row() {
        let all = crate::keys::SPEC_KEYS
            .iter()
            .chain(&crate::keys::SKILLBASE_KEYS)
            .chain(&crate::keys::PEER_KEYS)
            .chain(&crate::keys::IGNORED_PEER_KEYS);
        for k in all {
            let rows = KEYS.iter().filter(|r| r.keys.contains(k)).count();
            assert_eq!(rows, 1, "{k}");
        }
        // The reference reads exactly the specification's keys.
        for r in KEYS {
            let spec = r.keys.iter().all(|k| crate::keys::SPEC_KEYS.contains(k));
            let col = r.targets[Target::SkillsRef.column()];
            assert_eq!(col == Treatment::Reads, spec, "{:?}", r.keys);
        }
    }

    #[test]
    fn targets_parse_by_id_and_refuse_others_clearly() {
        for t in Target::ALL {
            assert_eq!(t.id().parse::<Target>(), Ok(t));
        }
        let e = "claude\u{1b}[31m".parse::<Target>().unwrap_err();
        assert!(
            e.contains("'claude[31m'") && e.contains("claude-code, codex"),
            "{e}"
        );
    }

    #[test]
    fn tables_have_one_column_per_target() {
        let t = readme_targets_table();
        for line in t.lines() {
            assert_eq!(line.matches('|').count(), Target::ALL.len() + 2, "{line}");
        }
        assert!(t.contains(
            "| `paths` | reads | ignores | ignores | ignores | ignores | ignores | **rejects** |"
        ));
        assert_eq!(readme_keys_table().lines().count(), KEYS.len() + 2);
    }
}
