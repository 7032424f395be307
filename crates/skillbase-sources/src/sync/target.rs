//! The agents `skillbase sync` writes for, and where each one reads skills from. Every folder
//! below was read from the tool's own documentation (December 2026); each cites it. None of the
//! six rejects a frontmatter key it does not know (OpenCode and gemini-cli ignore them), so a
//! SKILL.md is written exactly as stored: the folder's digest is the revision's.

use std::path::{Path, PathBuf};

pub use skillbase_format::compat::Target as Agent;

/// A tool whose native skills folder `sync` writes: one of the agents of
/// [`skillbase_format::compat`] (one list of agents, their ids and names) that has a skills
/// folder. Each folder below cites the tool's documentation:
///
/// - Claude Code: `.claude/skills/<name>/SKILL.md` in a project, `~/.claude/skills` for the
///   user. <https://code.claude.com/docs/en/skills> ("Where skills live").
/// - OpenAI Codex: `.agents/skills` in a repository (`$CWD/.agents/skills` up to the
///   repository root), `$HOME/.agents/skills` for the user (`~/.codex/skills` is the older
///   location). <https://developers.openai.com/codex/skills> (the `REPO` and `USER` scopes).
/// - Gemini CLI: workspace `.gemini/skills`, user `~/.gemini/skills` (each also read from the
///   `.agents/skills` alias). <https://geminicli.com/docs/cli/using-agent-skills/>
///   ("Discovery tiers").
/// - GitHub Copilot (CLI, cloud agent, VS Code agent mode): project `.github/skills`,
///   personal `~/.copilot/skills`.
///   <https://docs.github.com/en/copilot/how-tos/copilot-cli/customize-copilot/create-skills>.
/// - Cursor: project `.cursor/skills`, user `~/.cursor/skills`.
///   <https://cursor.com/docs/context/skills> ("Skill directories").
/// - OpenCode: project `.opencode/skills`, global `~/.config/opencode/skills`; unknown
///   frontmatter keys are ignored. <https://opencode.ai/docs/skills> ("Place files").
///
/// The reference validator (`skills-ref`) reads no folder, so it is no target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Target(Agent);

impl Target {
    /// Claude Code.
    pub const CLAUDE_CODE: Target = Target(Agent::ClaudeCode);
    /// OpenAI Codex.
    pub const CODEX: Target = Target(Agent::Codex);
    /// Google's gemini-cli.
    pub const GEMINI_CLI: Target = Target(Agent::GeminiCli);
    /// GitHub Copilot.
    pub const COPILOT: Target = Target(Agent::Copilot);
    /// Cursor.
    pub const CURSOR: Target = Target(Agent::Cursor);
    /// OpenCode.
    pub const OPENCODE: Target = Target(Agent::OpenCode);

    /// Every target, in the order the help lists them.
    pub const ALL: [Target; 6] = [
        Target::CLAUDE_CODE,
        Target::CODEX,
        Target::GEMINI_CLI,
        Target::COPILOT,
        Target::CURSOR,
        Target::OPENCODE,
    ];

    /// The target for `agent`, when it has a skills folder.
    pub fn new(agent: Agent) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.0 == agent)
    }

    /// The agent this target writes for.
    pub fn agent(self) -> Agent {
        self.0
    }

    /// The name `--target` takes (the agent's id).
    pub fn name(self) -> &'static str {
        self.0.id()
    }

    /// The target named `raw` (as [`Target::name`] spells it).
    pub fn parse(raw: &str) -> Result<Target, String> {
        let names = || {
            let n: Vec<&str> = Target::ALL.iter().map(|t| t.name()).collect();
            n.join(", ")
        };
        let agent: Agent = raw.parse().map_err(|_| {
            format!(
                "unknown target '{}'; write one of {}",
                skillbase_format::text::escape_controls(raw),
                names()
            )
        })?;
        Target::new(agent).ok_or_else(|| {
            format!(
                "{} reads no skills folder, so there is nothing to sync to; write one of {}",
                agent.label(),
                names()
            )
        })
    }

    /// The skills folder inside a project, relative to its root.
    pub fn project_folder(self) -> &'static [&'static str] {
        match self.0 {
            Agent::ClaudeCode => &[".claude", "skills"],
            Agent::Codex => &[".agents", "skills"],
            Agent::GeminiCli => &[".gemini", "skills"],
            Agent::Copilot => &[".github", "skills"],
            Agent::Cursor => &[".cursor", "skills"],
            Agent::OpenCode => &[".opencode", "skills"],
            // Not a target (`Target::new` refuses it); the agents' shared alias.
            Agent::SkillsRef => &[".agents", "skills"],
        }
    }

    /// The user's skills folder, relative to the home folder.
    pub fn user_folder(self) -> &'static [&'static str] {
        match self.0 {
            Agent::ClaudeCode => &[".claude", "skills"],
            Agent::Codex => &[".agents", "skills"],
            Agent::GeminiCli => &[".gemini", "skills"],
            Agent::Copilot => &[".copilot", "skills"],
            Agent::Cursor => &[".cursor", "skills"],
            Agent::OpenCode => &[".config", "opencode", "skills"],
            Agent::SkillsRef => &[".agents", "skills"],
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
