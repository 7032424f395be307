//! The agents `skillbase sync` writes for, and where each one reads skills from. Every folder
//! below was read from the tool's own documentation (December 2026); each cites it. None of the
//! six rejects a frontmatter key it does not know (OpenCode and gemini-cli ignore them), so a
//! SKILL.md is written exactly as stored: the folder's digest is the revision's.

use std::path::{Path, PathBuf};

/// A tool whose native skills folder `sync` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// Claude Code: `.claude/skills/<name>/SKILL.md` in a project, `~/.claude/skills` for the
    /// user. <https://code.claude.com/docs/en/skills> ("Where skills live": personal
    /// `~/.claude/skills/<skill-name>/SKILL.md`, project `.claude/skills/<skill-name>/SKILL.md`).
    ClaudeCode,
    /// OpenAI Codex: `.agents/skills` in a repository (`$CWD/.agents/skills` up to the
    /// repository root), `$HOME/.agents/skills` for the user (`~/.codex/skills` is the older
    /// location). <https://developers.openai.com/codex/skills> (the `REPO` and `USER` scopes).
    Codex,
    /// Gemini CLI: workspace `.gemini/skills`, user `~/.gemini/skills` (each also read from the
    /// `.agents/skills` alias). <https://geminicli.com/docs/cli/using-agent-skills/>
    /// ("Discovery tiers").
    GeminiCli,
    /// GitHub Copilot (CLI, cloud agent, VS Code agent mode): project `.github/skills`,
    /// personal `~/.copilot/skills`.
    /// <https://docs.github.com/en/copilot/how-tos/copilot-cli/customize-copilot/create-skills>.
    Copilot,
    /// Cursor: project `.cursor/skills`, user `~/.cursor/skills`.
    /// <https://cursor.com/docs/context/skills> ("Skill directories").
    Cursor,
    /// OpenCode: project `.opencode/skills`, global `~/.config/opencode/skills`; unknown
    /// frontmatter keys are ignored. <https://opencode.ai/docs/skills> ("Place files").
    OpenCode,
}

impl Target {
    /// Every target, in the order the help lists them.
    pub const ALL: [Target; 6] = [
        Target::ClaudeCode,
        Target::Codex,
        Target::GeminiCli,
        Target::Copilot,
        Target::Cursor,
        Target::OpenCode,
    ];

    /// The name `--target` takes.
    pub fn name(self) -> &'static str {
        match self {
            Target::ClaudeCode => "claude-code",
            Target::Codex => "codex",
            Target::GeminiCli => "gemini-cli",
            Target::Copilot => "copilot",
            Target::Cursor => "cursor",
            Target::OpenCode => "opencode",
        }
    }

    /// The target named `raw` (as [`Target::name`] spells it).
    pub fn parse(raw: &str) -> Result<Target, String> {
        Target::ALL
            .into_iter()
            .find(|t| t.name() == raw)
            .ok_or_else(|| {
                let names: Vec<&str> = Target::ALL.iter().map(|t| t.name()).collect();
                format!(
                    "unknown target '{}'; write one of {}",
                    skillbase_format::text::escape_controls(raw),
                    names.join(", ")
                )
            })
    }

    /// The skills folder inside a project, relative to its root.
    pub fn project_folder(self) -> &'static [&'static str] {
        match self {
            Target::ClaudeCode => &[".claude", "skills"],
            Target::Codex => &[".agents", "skills"],
            Target::GeminiCli => &[".gemini", "skills"],
            Target::Copilot => &[".github", "skills"],
            Target::Cursor => &[".cursor", "skills"],
            Target::OpenCode => &[".opencode", "skills"],
        }
    }

    /// The user's skills folder, relative to the home folder.
    pub fn user_folder(self) -> &'static [&'static str] {
        match self {
            Target::ClaudeCode => &[".claude", "skills"],
            Target::Codex => &[".agents", "skills"],
            Target::GeminiCli => &[".gemini", "skills"],
            Target::Copilot => &[".copilot", "skills"],
            Target::Cursor => &[".cursor", "skills"],
            Target::OpenCode => &[".config", "opencode", "skills"],
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Where the skills folder is: under a project's root, or under the user's home folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// A project (repository) folder: the target's project skills folder under it.
    Project(PathBuf),
    /// The user's own folder (the home folder given): the target's user skills folder.
    User(PathBuf),
}

impl Place {
    /// The root the skills folder is under, and the folders from it to the skills folder.
    pub fn parts(&self, target: Target) -> (&Path, &'static [&'static str]) {
        match self {
            Place::Project(root) => (root, target.project_folder()),
            Place::User(home) => (home, target.user_folder()),
        }
    }

    /// The skills folder (not checked).
    pub fn skills_folder(&self, target: Target) -> PathBuf {
        let (root, rel) = self.parts(target);
        rel.iter().fold(root.to_path_buf(), |p, seg| p.join(seg))
    }
}
