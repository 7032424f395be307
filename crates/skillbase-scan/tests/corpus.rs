//! The labelled corpus (`eval/scan/`): precision and recall per family and at the high-severity
//! verdict, gated at the targets. `cargo test -p skillbase-scan --test integration
//! corpus -- --nocapture` prints the table BENCHMARKS.md quotes.

use crate::examples::bundle;
use skillbase_scan::{Family, ScanContext, Scanner, Severity};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Targets at the high-severity verdict (issue 37).
const MIN_RECALL: f64 = 0.80;
const MAX_FALSE_POSITIVES: f64 = 0.10;

struct Case {
    path: String,
    families: Vec<Family>,
    flagged: Vec<Family>,
    verdict: Option<Severity>,
}

/// The store's other skills the corpus is scanned against (for name imitation).
fn store_names() -> Vec<String> {
    [
        "api-error-triage",
        "commit-message-writer",
        "incident-postmortem",
        "refund-policy",
        "refund-procedure",
        "release-notes-drafter",
        "sql-migration-reviewer",
        "pdf-tools",
        "git-helper",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

fn cases() -> Vec<Case> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../eval/scan");
    let labels = std::fs::read_to_string(root.join("labels.tsv")).expect("eval/scan/labels.tsv");
    let scanner = Scanner::new().expect("the built-in rules load");
    let names = store_names();
    let names = skillbase_scan::SkillNames::new(names.iter().map(|n| (n.as_str(), "store")));
    let ctx = ScanContext {
        other_skills: Some(&names),
        origin: None,
    };
    let mut out = Vec::new();
    for line in labels
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let mut cols = line.split('\t');
        let path = cols.next().expect("a path").to_owned();
        let label = cols.next().unwrap_or_else(|| panic!("{path}: no label"));
        let families: Vec<Family> = if label == "none" {
            Vec::new()
        } else {
            label
                .split(',')
                .map(|f| f.parse().unwrap_or_else(|e| panic!("{path}: {e}")))
                .collect()
        };
        let dir = root.join(&path);
        assert!(dir.join("SKILL.md").is_file(), "{path}: no SKILL.md");
        let report = scanner.scan_bundle(&bundle(&dir), &ctx);
        let mut flagged: Vec<Family> = report
            .findings
            .iter()
            .filter(|f| f.severity >= Severity::High)
            .map(|f| f.family)
            .collect();
        flagged.sort();
        flagged.dedup();
        out.push(Case {
            path,
            families,
            flagged,
            verdict: report.verdict,
        });
    }
    out
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 { 1.0 } else { a as f64 / b as f64 }
}

#[test]
fn corpus_meets_the_targets() {
    let cases = cases();
    let hostile: Vec<&Case> = cases.iter().filter(|c| !c.families.is_empty()).collect();
    let negative: Vec<&Case> = cases.iter().filter(|c| c.families.is_empty()).collect();
    assert!(
        hostile.len() >= 60 && negative.len() >= 60,
        "{} hostile, {} negative",
        hostile.len(),
        negative.len()
    );
    let high = |c: &Case| c.verdict.is_some_and(|v| v >= Severity::High);
    let caught = hostile.iter().filter(|c| high(c)).count();
    let false_pos: Vec<&str> = negative
        .iter()
        .filter(|c| high(c))
        .map(|c| c.path.as_str())
        .collect();
    let missed: Vec<&str> = hostile
        .iter()
        .filter(|c| !high(c))
        .map(|c| c.path.as_str())
        .collect();
    println!("| family | hostile cases | recall (high) | flagged (high) | precision (high) |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    let mut rows = BTreeMap::new();
    for f in Family::ALL {
        let labelled = cases.iter().filter(|c| c.families.contains(&f)).count();
        let hit = cases
            .iter()
            .filter(|c| c.families.contains(&f) && c.flagged.contains(&f))
            .count();
        let flagged = cases.iter().filter(|c| c.flagged.contains(&f)).count();
        let right = cases
            .iter()
            .filter(|c| c.flagged.contains(&f) && !c.families.is_empty())
            .count();
        if labelled + flagged > 0 {
            rows.insert(f, (labelled, hit, flagged, right));
            println!(
                "| {f} | {labelled} | {:.2} | {flagged} | {:.2} |",
                ratio(hit, labelled),
                ratio(right, flagged)
            );
        }
    }
    let recall = ratio(caught, hostile.len());
    let fp = ratio(false_pos.len(), negative.len());
    println!(
        "\nhostile: {} of {} at high or above (recall {recall:.3}); missed: {missed:?}",
        caught,
        hostile.len()
    );
    println!(
        "hard negatives: {} of {} at high or above ({:.1}%): {false_pos:?}",
        false_pos.len(),
        negative.len(),
        fp * 100.0
    );
    assert!(
        recall >= MIN_RECALL,
        "recall {recall:.3} below {MIN_RECALL}; missed {missed:?}"
    );
    assert!(
        fp <= MAX_FALSE_POSITIVES,
        "false positives {fp:.3} above {MAX_FALSE_POSITIVES}: {false_pos:?}"
    );
}
