//! Commands over skill folders on disk: `validate`, `read-properties`, `to-prompt`, `new`,
//! `digest`.

use crate::{EXIT_INVALID, EXIT_OK, EXIT_USAGE};
use clap::{Args, ValueEnum};
use serde::Serialize;
use skillbase_format::compat::{Target, Verdict, portable_dir};
use skillbase_format::discover::{Found, discover};
use skillbase_format::prompt::{self, PropertiesError};
use skillbase_format::skill_dir::is_skill_md_path;
use skillbase_format::validate::{Diagnostic, Profile, Report, ValidateOptions, validate_dir};
use skillbase_format::{SkillName, YamlLimits};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum OutputFormat {
    Text,
    Json,
}

/// Validate skills: a skill folder, a SKILL.md file, or a folder searched for skills.
#[derive(Args)]
pub struct ValidateArgs {
    /// Apply exactly the Agent Skills specification (the reference validator's rules); without
    /// it, Skillbase's keys are checked too and unknown keys are warnings.
    #[arg(long)]
    spec: bool,
    /// Also say, per agent, which keys of each skill it would reject or ignore (the README's
    /// compatibility table); exit 1 when a named agent would reject a skill.
    #[arg(long)]
    portable: bool,
    /// The agents `--portable` checks, comma-separated: claude-code, codex, gemini-cli, copilot,
    /// cursor, opencode, skills-ref (all by default).
    #[arg(
        long,
        value_delimiter = ',',
        requires = "portable",
        value_name = "AGENT"
    )]
    agent_target: Vec<Target>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
    /// Skill folders, SKILL.md files, or folders to search.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
}

/// Print a skill's frontmatter properties as JSON (like the reference's `read-properties`).
#[derive(Args)]
pub struct ReadPropertiesArgs {
    /// A skill folder or its SKILL.md.
    #[arg(value_name = "PATH")]
    path: PathBuf,
}

/// Print the `<available_skills>` block for skill folders (byte-identical to the reference).
#[derive(Args)]
pub struct ToPromptArgs {
    /// Skill folders or SKILL.md files, rendered in this order.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
}

/// Print a skill folder's content digest: the digest a revision of it gets in the store
/// (README, "The content digest", defines it so another tool can recompute it).
#[derive(Args)]
pub struct DigestArgs {
    /// A skill folder or its SKILL.md.
    #[arg(value_name = "DIR")]
    path: PathBuf,
    /// Print the digest with every file's path, digest, size and executable bit, as JSON.
    #[arg(long)]
    json: bool,
}

/// Create a new skill folder with a commented SKILL.md showing every key.
#[derive(Args)]
pub struct NewArgs {
    /// The skill's name (lowercase letters, digits and hyphens).
    name: String,
    /// Folder in which to create the skill folder.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
}

/// Refuse missing paths up front, as the reference's command line does (exit 2).
fn check_exist(paths: &[PathBuf]) -> Result<(), u8> {
    for p in paths {
        if std::fs::symlink_metadata(p).is_err() {
            eprintln!("Error: Path '{}' does not exist.", p.display());
            return Err(EXIT_USAGE);
        }
    }
    Ok(())
}

fn skill_dir_of(path: &Path) -> PathBuf {
    if is_skill_md_path(path) && path.is_file() {
        match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        }
    } else {
        path.to_path_buf()
    }
}

#[derive(Serialize)]
struct JsonReport<'a> {
    path: String,
    name: Option<&'a str>,
    valid: bool,
    errors: Vec<&'a str>,
    warnings: Vec<&'a str>,
    diagnostics: &'a [Diagnostic],
    #[serde(skip_serializing_if = "Option::is_none")]
    portable: Option<&'a [Verdict]>,
}

pub fn validate(args: ValidateArgs) -> anyhow::Result<u8> {
    if let Err(code) = check_exist(&args.paths) {
        return Ok(code);
    }
    let opts = ValidateOptions {
        profile: if args.spec {
            Profile::Spec
        } else {
            Profile::Skillbase
        },
        ..ValidateOptions::default()
    };
    // Every (shown path, verdict) in argument order; a path with no skill is itself invalid.
    let mut jobs: Vec<(PathBuf, Option<PathBuf>)> = Vec::new();
    for p in &args.paths {
        match discover(p) {
            Found::Skills(dirs) if dirs.len() == 1 && dirs[0] == skill_dir_of(p) => {
                jobs.push((p.clone(), Some(dirs[0].clone())));
            }
            Found::Skills(dirs) => jobs.extend(dirs.into_iter().map(|d| (d.clone(), Some(d)))),
            Found::NoSkills | Found::Missing => jobs.push((p.clone(), None)),
        }
    }
    let reports = run_parallel(&jobs, |(_, dir)| match dir {
        Some(d) => validate_dir(d, &opts),
        None => no_skill_report(),
    });

    let targets = if args.agent_target.is_empty() {
        Target::ALL.to_vec()
    } else {
        args.agent_target.clone()
    };
    let verdicts: Vec<Option<Vec<Verdict>>> = if args.portable {
        run_parallel(&jobs, |(_, dir)| {
            dir.as_ref().map(|d| portable_dir(d, &targets, &opts))
        })
    } else {
        vec![None; jobs.len()]
    };
    let any_invalid = reports.iter().any(|r| !r.is_valid());
    let any_rejected = verdicts
        .iter()
        .flatten()
        .flatten()
        .any(|v| !v.rejects.is_empty());
    match args.format {
        OutputFormat::Json => {
            let out: Vec<JsonReport<'_>> = jobs
                .iter()
                .zip(&reports)
                .zip(&verdicts)
                .map(|(((shown, _), r), v)| JsonReport {
                    path: shown.display().to_string(),
                    name: r.name.as_deref(),
                    valid: r.is_valid(),
                    errors: r.errors().map(|d| d.message.as_str()).collect(),
                    warnings: r.warnings().map(|d| d.message.as_str()).collect(),
                    diagnostics: &r.diagnostics,
                    portable: v.as_deref(),
                })
                .collect();
            let text = serde_json::to_string_pretty(&out).unwrap_or_else(|_| "[]".into());
            outln!("{text}")?;
        }
        OutputFormat::Text => {
            write_text(&jobs, &reports)?;
            for ((shown, _), v) in jobs.iter().zip(&verdicts) {
                if let Some(v) = v {
                    write_portable(shown, v)?;
                }
            }
        }
    }
    Ok(if any_invalid || any_rejected {
        EXIT_INVALID
    } else {
        EXIT_OK
    })
}

/// One skill's verdict per agent: what it would reject, what it would ignore.
fn write_portable(shown: &Path, verdicts: &[Verdict]) -> std::io::Result<()> {
    let keys = |k: &[String]| {
        k.iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    outln!("Portability of {}:", shown.display())?;
    for v in verdicts {
        let label = v.target.label();
        if !v.rejects.is_empty() {
            if v.target == Target::SkillsRef {
                outln!("  {label}: rejects it")?;
                for why in &v.rejects {
                    outln!("    - {why}")?;
                }
            } else {
                outln!("  {label}: rejects it for {}", keys(&v.rejects))?;
            }
        } else if v.ignores.is_empty() {
            outln!("  {label}: reads every key")?;
        } else {
            outln!("  {label}: loads it, ignores {}", keys(&v.ignores))?;
        }
    }
    Ok(())
}

/// The text verdicts: each valid skill on stdout, each failure and its warnings on stderr (stdout
/// flushed first, so the two streams read in order on one terminal).
fn write_text(jobs: &[(PathBuf, Option<PathBuf>)], reports: &[Report]) -> std::io::Result<()> {
    let mut so = std::io::BufWriter::new(std::io::stdout().lock());
    let mut se = std::io::BufWriter::new(std::io::stderr().lock());
    for ((shown, _), r) in jobs.iter().zip(reports) {
        let shown = shown.display();
        if r.is_valid() {
            writeln!(so, "Valid skill: {shown}")?;
        } else {
            so.flush()?;
            let _ = writeln!(se, "Validation failed for {shown}:");
            for d in r.errors() {
                write_diagnostic(&mut se, "-", d);
            }
        }
        let mut warnings = r.warnings().peekable();
        if warnings.peek().is_some() {
            so.flush()?;
            let _ = writeln!(se, "Warnings for {shown}:");
            for d in warnings {
                write_diagnostic(&mut se, "!", d);
            }
        }
        let _ = se.flush();
    }
    so.flush()
}

fn write_diagnostic(w: &mut impl Write, bullet: &str, d: &Diagnostic) {
    let _ = writeln!(w, "  {bullet} {}", d.message);
    let mut at = d.file.clone();
    if let Some(line) = d.line {
        at.push_str(&format!(":{line}"));
    }
    if let Some(field) = &d.field {
        if !at.is_empty() {
            at.push(' ');
        }
        at.push_str(&format!("({field})"));
    }
    match (&d.hint, at.is_empty()) {
        (Some(h), false) => {
            let _ = writeln!(w, "    at {at}: {h}");
        }
        (Some(h), true) => {
            let _ = writeln!(w, "    {h}");
        }
        (None, false) => {
            let _ = writeln!(w, "    at {at}");
        }
        (None, true) => {}
    }
}

fn no_skill_report() -> Report {
    Report {
        name: None,
        diagnostics: vec![Diagnostic {
            severity: skillbase_format::Severity::Error,
            file: String::new(),
            field: None,
            line: None,
            message: "No skill found: no SKILL.md here or in any folder below".into(),
            hint: Some(
                "point at a skill folder, its SKILL.md, or a folder containing skill folders"
                    .into(),
            ),
        }],
    }
}

/// Run `f` over `items` on all cores, keeping order.
fn run_parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(items.len().max(1));
    if threads <= 1 || items.len() < 16 {
        return items.iter().map(&f).collect();
    }
    let chunk = items.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|c| s.spawn(|| c.iter().map(&f).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

fn print_error(e: &PropertiesError) {
    eprintln!(
        "Error: {}",
        skillbase_format::text::escape_controls(&e.to_string())
    );
}

pub fn read_properties(args: ReadPropertiesArgs) -> anyhow::Result<u8> {
    if let Err(code) = check_exist(std::slice::from_ref(&args.path)) {
        return Ok(code);
    }
    let dir = skill_dir_of(&args.path);
    match prompt::read_properties(&dir, &YamlLimits::default()) {
        Ok(p) => {
            outln!("{}", prompt::python_json(&p.to_json()))?;
            Ok(EXIT_OK)
        }
        Err(e) => {
            print_error(&e);
            Ok(EXIT_INVALID)
        }
    }
}

pub fn to_prompt(args: ToPromptArgs) -> anyhow::Result<u8> {
    if let Err(code) = check_exist(&args.paths) {
        return Ok(code);
    }
    let dirs: Vec<PathBuf> = args.paths.iter().map(|p| skill_dir_of(p)).collect();
    // Read the folders on all cores; `collect` keeps the first error in argument order, so the
    // result is the same as `prompt::to_prompt`'s.
    let limits = YamlLimits::default();
    let props: Result<Vec<_>, _> = run_parallel(&dirs, |d| prompt::prompt_properties(d, &limits))
        .into_iter()
        .collect();
    match props.map(|p| prompt::render_prompt(&p)) {
        Ok(text) => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.write_all(b"\n")?;
            Ok(EXIT_OK)
        }
        Err(e) => {
            print_error(&e);
            Ok(EXIT_INVALID)
        }
    }
}

pub fn new(args: NewArgs) -> anyhow::Result<u8> {
    let name = match SkillName::parse(&args.name) {
        Ok(n) => n,
        Err(e) => {
            eprintln!(
                "Error: {}: {}",
                skillbase_format::text::escape_controls(&e.to_string()),
                e.hint()
            );
            return Ok(EXIT_INVALID);
        }
    };
    if !args.dir.is_dir() {
        eprintln!("Error: Path '{}' is not a folder.", args.dir.display());
        return Ok(EXIT_USAGE);
    }
    let folder = args.dir.join(name.as_str());
    if folder.exists() {
        eprintln!(
            "Error: {} already exists; choose another name or remove it",
            folder.display()
        );
        return Ok(EXIT_INVALID);
    }
    let result = std::fs::create_dir(&folder)
        .and_then(|()| std::fs::write(folder.join("SKILL.md"), template(&name)));
    if let Err(e) = result {
        eprintln!("Error: cannot create {}: {e}", folder.display());
        let _ = std::fs::remove_dir_all(&folder);
        return Ok(EXIT_INVALID);
    }
    outln!("Created {}", folder.join("SKILL.md").display())?;
    outln!(
        "Next: edit the description and body, then run `skillbase validate {}`",
        folder.display()
    )?;
    Ok(EXIT_OK)
}

fn template(name: &SkillName) -> String {
    format!(
        r#"---
# Required. Lowercase letters, digits and hyphens; must equal the folder name.
name: {name}
# Required, at most 1024 characters. What the skill does AND when to use it: this is what the
# model reads when deciding whether to load the skill, so name the words a user would say.
description: Describe what {name} does and when to use it. Use when the user asks to ...

# --- Optional Agent Skills keys -------------------------------------------------------------
# license: Apache-2.0
# compatibility: Requires git and network access   # at most 500 characters
# allowed-tools: Bash(git:*) Read                  # experimental, space-separated
# metadata:
#   author: your-team
#   version: "1.0"

# --- Optional Skillbase keys (other tools ignore them) ---------------------------------------
# Phrases that load this skill deterministically when the user's message contains them
# (whole words, case- and accent-insensitive). Only for skills that can finish the turn alone.
# triggers: [example phrase, another phrase]
#
# Skills this one cannot work without; they travel with it.
# companions: [another-skill]
#
# JSON Schema of the skill's arguments, checked before the body reaches the model.
# inputs:
#   type: object
#   properties:
#     ticket_id:
#       type: string
#   required: [ticket_id]
#   additionalProperties: false
#
# What the skill may use. A request, never a grant: each call is checked against the agent's
# current grants. Name vault entries, never paste secret values.
# capabilities:
#   tools: [web_fetch]
#   vault: [EXAMPLE_API_KEY]
#   hosts: [api.example.com]
#
# How long its work takes: immediate, seconds or tens_of_seconds.
# cost: immediate
#
# Eagerness is not a skill key: list the skill in an agent's `eager` setting instead.
---

# {name}

## When to use this skill

Say when this skill applies, and when it does not.

## Steps

1. The first thing to do.
2. What to check before going on.
3. How to report the result.

## Gotchas

- What usually goes wrong, and how to avoid it.
"#
    )
}

pub fn digest(args: DigestArgs) -> anyhow::Result<u8> {
    if let Err(code) = check_exist(std::slice::from_ref(&args.path)) {
        return Ok(code);
    }
    let dir = skill_dir_of(&args.path);
    let bundle = match skillbase_format::Bundle::from_dir(&dir, &Default::default()) {
        // The signature beside SKILL.md signs the files; it is not one of them.
        Ok(b) => b.split_signature().0,
        Err(e) => {
            eprintln!(
                "Error: {}",
                skillbase_format::text::escape_controls(&format!("{}: {e}", dir.display()))
            );
            return Ok(EXIT_INVALID);
        }
    };
    if args.json {
        let files: Vec<_> = bundle
            .files()
            .iter()
            .map(|f| {
                serde_json::json!({
                    "path": f.path,
                    "digest": f.digest,
                    "size": f.bytes.len(),
                    "executable": f.executable,
                })
            })
            .collect();
        let v = serde_json::json!({"digest": bundle.digest(), "files": files});
        outln!(
            "{}",
            serde_json::to_string_pretty(&v).expect("JSON serializes")
        )?;
    } else {
        outln!("{}", bundle.digest())?;
    }
    Ok(EXIT_OK)
}
