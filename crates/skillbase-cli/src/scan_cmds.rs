//! `skillbase scan PATH...`: every file of each skill folder through `skillbase-scan`, printed
//! for people, as JSON or as SARIF 2.1.0; the exit status says whether any finding reached
//! `--fail-on`.
//!
//! `skillbase scan --store [--agent A]` scans the store's active revisions again with the
//! current rules (`Store::rescan`, after a rules change) and reports those whose verdict changed.

use crate::{EXIT_INVALID, EXIT_OK, EXIT_USAGE};
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use serde::Serialize;
use serde_json::{Value, json};
use skillbase_format::discover::{Found, discover};
use skillbase_scan::{Limits, Report, ScanContext, Scanner, Severity};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Deepest folder read inside a skill.
const MAX_DEPTH: usize = 8;

/// Scan skills for hostile content: instruction hijack, hidden text, exfiltration, droppers,
/// persistence, envelope consistency, credential asks, routing abuse.
#[derive(Args)]
#[command(
    after_help = "Exit codes: 0 no finding at or above --fail-on, 1 at least one, 2 usage error or a path with no skill."
)]
pub struct ScanArgs {
    /// Skill folders, SKILL.md files, or folders searched for skills.
    #[arg(
        required_unless_present = "store",
        conflicts_with = "store",
        value_name = "PATH"
    )]
    paths: Vec<PathBuf>,
    /// Scan the store's active revisions again with the current rules, keep the findings, and
    /// report the revisions whose verdict changed.
    #[arg(long, conflicts_with = "sarif")]
    store: bool,
    /// With --store: only this agent's scope and the shared one.
    #[arg(long, requires = "store")]
    agent: Option<String>,
    /// Print the reports as JSON (one object per skill).
    #[arg(long, conflicts_with = "sarif")]
    json: bool,
    /// Print SARIF 2.1.0 for code-scanning tools.
    #[arg(long)]
    sarif: bool,
    /// Exit 1 when any finding is at or above this severity.
    #[arg(long, value_enum, default_value_t = FailOn::High)]
    fail_on: FailOn,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum FailOn {
    Info,
    Low,
    Medium,
    High,
    Critical,
}

impl FailOn {
    fn severity(self) -> Severity {
        match self {
            FailOn::Info => Severity::Info,
            FailOn::Low => Severity::Low,
            FailOn::Medium => Severity::Medium,
            FailOn::High => Severity::High,
            FailOn::Critical => Severity::Critical,
        }
    }
}

/// One skill's report, as `--json` prints it.
#[derive(Serialize)]
struct Scanned {
    path: String,
    #[serde(flatten)]
    report: Report,
}

/// Whether the command scans the store (`--store`), which needs the store's arguments.
pub fn is_store(args: &ScanArgs) -> bool {
    args.store
}

/// `skillbase scan --store [--agent A]`: rescan, print the changed verdicts; exit 1 when a
/// changed verdict reaches --fail-on.
pub async fn rescan(s: &crate::common::StoreArgs, args: ScanArgs) -> Result<u8> {
    let agent = match &args.agent {
        Some(a) => Some(
            skillbase_store::AgentName::parse(a).map_err(|e| anyhow::anyhow!("--agent: {e}"))?,
        ),
        None => None,
    };
    let store = s.open().await?;
    let report = store.rescan(agent.as_ref()).await?;
    store.close().await;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        let name = |v: Option<Severity>| v.map_or("clean", |v| v.as_str());
        for c in &report.changed {
            let before = if c.scanned_before {
                name(c.before)
            } else {
                "never scanned"
            };
            outln!(
                "{} ({}) revision {}: {before} -> {}",
                c.name,
                c.scope,
                c.rev,
                name(c.after)
            )?;
        }
        outln!(
            "{} revisions scanned, {} verdicts changed (rules {})",
            report.scanned,
            report.changed.len(),
            report.rules
        )?;
    }
    let threshold = args.fail_on.severity();
    let reached = report
        .changed
        .iter()
        .any(|c| c.after.is_some_and(|v| v >= threshold));
    Ok(if reached { EXIT_INVALID } else { EXIT_OK })
}

pub fn scan(args: ScanArgs) -> Result<u8> {
    let mut dirs = Vec::new();
    for p in &args.paths {
        match discover(p) {
            Found::Skills(found) => dirs.extend(found),
            Found::NoSkills => {
                eprintln!(
                    "Error: no skill (a folder with a SKILL.md) at '{}'.",
                    p.display()
                );
                return Ok(EXIT_USAGE);
            }
            Found::Missing => {
                eprintln!("Error: Path '{}' does not exist.", p.display());
                return Ok(EXIT_USAGE);
            }
        }
    }
    let scanner = Scanner::new().context("the built-in scanning rules do not load")?;
    let limits = Limits::default();
    let scanner = scanner.with_limits(limits);
    let scanned: Vec<Scanned> = dirs
        .iter()
        .map(|d| Scanned {
            path: d.display().to_string(),
            report: scan_dir(&scanner, d, &limits),
        })
        .collect();
    if args.sarif {
        outln!(
            "{}",
            serde_json::to_string_pretty(&sarif(&scanner, &scanned))?
        )?;
    } else if args.json {
        outln!("{}", serde_json::to_string_pretty(&scanned)?)?;
    } else {
        print_text(&scanned)?;
    }
    let threshold = args.fail_on.severity();
    Ok(if scanned.iter().any(|s| s.report.reaches(threshold)) {
        EXIT_INVALID
    } else {
        EXIT_OK
    })
}

/// Read every file of a skill folder (links and unreadable files reported, never followed) and
/// scan it.
fn scan_dir(scanner: &Scanner, dir: &Path, limits: &Limits) -> Report {
    let mut files = Vec::new();
    let mut unreadable = Vec::new();
    collect(dir, dir, 0, limits, &mut files, &mut unreadable);
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let mut report = scanner.scan_bundle(&files, &ScanContext::default());
    for (file, reason) in unreadable {
        report.add_unreadable(&file, &reason);
    }
    report
}

fn collect(
    root: &Path,
    dir: &Path,
    depth: usize,
    limits: &Limits,
    files: &mut Vec<(String, Vec<u8>)>,
    unreadable: &mut Vec<(String, String)>,
) {
    let rel = |p: &Path| {
        p.strip_prefix(root)
            .unwrap_or(p)
            .to_string_lossy()
            .replace('\\', "/")
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            unreadable.push((rel(dir), format!("folder not readable: {e}")));
            return;
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name == ".git" {
            continue;
        }
        match entry.file_type() {
            Ok(t) if t.is_symlink() => {
                unreadable.push((rel(&path), "a link (not followed)".into()))
            }
            Ok(t) if t.is_dir() && depth < MAX_DEPTH => {
                collect(root, &path, depth + 1, limits, files, unreadable)
            }
            Ok(t) if t.is_dir() => {
                unreadable.push((rel(&path), format!("deeper than {MAX_DEPTH} folders")))
            }
            Ok(_) => match read_bounded(&path, limits.max_file_bytes) {
                Ok(bytes) => files.push((rel(&path), bytes)),
                Err(e) => unreadable.push((rel(&path), format!("not readable: {e}"))),
            },
            Err(e) => unreadable.push((rel(&path), format!("not readable: {e}"))),
        }
    }
}

/// At most `max + 1` bytes of a file (one more than the scanner reads, so it knows the file is
/// larger).
fn read_bounded(path: &Path, max: usize) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(max as u64 + 1)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

fn print_text(scanned: &[Scanned]) -> std::io::Result<()> {
    for s in scanned {
        for f in &s.report.findings {
            let at = if f.line == 0 {
                format!("{}/{}", s.path, f.file)
            } else {
                format!("{}/{}:{}:{}", s.path, f.file, f.line, f.column)
            };
            outln!("{at}: {} {}: {}", f.severity, f.rule, f.seen)?;
            outln!("    why: {}", f.why)?;
            outln!("    fix: {}", f.fix)?;
        }
        let verdict = s.report.verdict.map(|v| v.as_str()).unwrap_or("clean");
        let n = s.report.findings.len();
        let plural = if n == 1 { "" } else { "s" };
        outln!("{}: {verdict} ({n} finding{plural})", s.path)?;
    }
    Ok(())
}

/// The SARIF level of a severity.
fn level(s: Severity) -> &'static str {
    match s {
        Severity::Critical | Severity::High => "error",
        Severity::Medium => "warning",
        Severity::Low | Severity::Info => "note",
    }
}

/// One SARIF 2.1.0 log with one run: the rules as the driver's, each finding as a result.
fn sarif(scanner: &Scanner, scanned: &[Scanned]) -> Value {
    let rules = scanner.rules();
    let driver_rules: Vec<Value> = rules
        .iter()
        .map(|r| {
            json!({
                "id": r.id,
                "shortDescription": {"text": r.why},
                "help": {"text": r.fix},
                "defaultConfiguration": {"level": level(r.severity)},
                "properties": {"family": r.family.as_str(), "severity": r.severity.as_str()},
            })
        })
        .collect();
    let results: Vec<Value> = scanned
        .iter()
        .flat_map(|s| s.report.findings.iter().map(move |f| (s, f)))
        .map(|(s, f)| {
            let uri = format!("{}/{}", s.path.trim_end_matches('/'), f.file).trim_start_matches("./").to_owned();
            let mut physical = json!({"artifactLocation": {"uri": uri}});
            if f.line > 0 {
                physical["region"] = json!({"startLine": f.line, "startColumn": f.column.max(1)});
            }
            let mut result = json!({
                "ruleId": f.rule,
                "level": level(f.severity),
                "message": {"text": format!("{} Seen: {} Fix: {}", f.why, f.seen, f.fix)},
                "locations": [{"physicalLocation": physical}],
                "properties": {"severity": f.severity.as_str(), "family": f.family.as_str(), "seen": f.seen},
            });
            if let Some(i) = rules.iter().position(|r| r.id == f.rule) {
                result["ruleIndex"] = json!(i);
            }
            result
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "skillbase-scan",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://github.com/skillbase/skillbase",
                "properties": {"rulesDigest": scanner.digest()},
                "rules": driver_rules,
            }},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    })
}
