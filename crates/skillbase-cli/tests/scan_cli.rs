//! `skillbase scan`: exit codes by the highest severity and `--fail-on`, the text, JSON and
//! SARIF 2.1.0 outputs (checked against the fields the SARIF specification requires).

use crate::common::{BIN, EXAMPLES, Run};
use serde_json::Value;
use std::fs;
use std::path::Path;
use std::process::Command;

const HOSTILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../eval/scan/hostile");

fn scan(args: &[&str]) -> Run {
    let out = Command::new(BIN)
        .arg("scan")
        .args(args)
        .output()
        .expect("run skillbase");
    Run {
        code: out.status.code().expect("exit code"),
        stdout: String::from_utf8(out.stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("utf-8 stderr"),
    }
}

fn hostile(name: &str) -> String {
    format!("{HOSTILE}/{name}")
}

#[test]
fn examples_are_clean_and_exit_0() {
    let r = scan(&[EXAMPLES]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stdout.contains("refund-procedure: clean (0 findings)"),
        "{r:?}"
    );
}

#[test]
fn a_high_finding_exits_1_and_says_where_why_and_fix() {
    let r = scan(&[&hostile("hijack-ignore-en")]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.contains(
            "SKILL.md:9:4: high hijack-ignore-previous: Ignore all previous instructions"
        ),
        "{r:?}"
    );
    assert!(
        r.stdout.contains("    why: ") && r.stdout.contains("    fix: "),
        "{r:?}"
    );
    let r = scan(&["--fail-on", "critical", &hostile("hijack-ignore-en")]);
    assert_eq!(r.code, 0, "{r:?}");
    let r = scan(&["--fail-on", "critical", &hostile("dropper-reverse-shell")]);
    assert_eq!(r.code, 1, "{r:?}");
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(scan(&["/no/such/path"]).code, 2);
    let dir = tempfile::tempdir().expect("temp dir");
    assert_eq!(scan(&[dir.path().to_str().expect("utf-8")]).code, 2);
    assert_eq!(scan(&["--fail-on", "severe", EXAMPLES]).code, 2);
}

#[test]
fn json_has_one_report_per_skill() {
    let r = scan(&[
        "--json",
        &hostile("exfil-env-dump"),
        &format!("{EXAMPLES}/refund-policy"),
    ]);
    assert_eq!(r.code, 1, "{r:?}");
    let v: Value = serde_json::from_str(&r.stdout).expect("JSON");
    let reports = v.as_array().expect("an array");
    assert_eq!(reports.len(), 2);
    assert_eq!(reports[0]["verdict"], "high");
    let f = &reports[0]["findings"][0];
    assert_eq!(f["file"], "scripts/diag.sh");
    assert_eq!(f["family"], "exfiltration");
    assert!(
        reports[0]["rules"]
            .as_str()
            .is_some_and(|d| d.starts_with("sha256:"))
    );
    assert_eq!(reports[1]["verdict"], Value::Null);
}

/// The members SARIF 2.1.0 (OASIS, §3) requires: `version` "2.1.0" and `runs` on the log;
/// `tool.driver.name` on a run; `message.text` on a result; rule ids and indices that agree;
/// regions with 1-based lines; a `level` from the enumeration.
fn check_sarif(v: &Value) {
    assert_eq!(v["version"], "2.1.0");
    let runs = v["runs"].as_array().expect("runs is an array");
    for run in runs {
        let driver = &run["tool"]["driver"];
        assert!(driver["name"].as_str().is_some_and(|n| !n.is_empty()));
        let rules = driver["rules"].as_array().expect("rules");
        for rule in rules {
            assert!(rule["id"].is_string());
        }
        for result in run["results"].as_array().expect("results is an array") {
            assert!(
                result["message"]["text"]
                    .as_str()
                    .is_some_and(|t| !t.is_empty())
            );
            assert!(
                ["none", "note", "warning", "error"]
                    .contains(&result["level"].as_str().expect("level"))
            );
            let index = result["ruleIndex"].as_u64().expect("ruleIndex") as usize;
            assert_eq!(rules[index]["id"], result["ruleId"]);
            for loc in result["locations"].as_array().expect("locations") {
                let physical = &loc["physicalLocation"];
                assert!(physical["artifactLocation"]["uri"].is_string());
                if let Some(region) = physical.get("region") {
                    assert!(region["startLine"].as_u64().is_some_and(|l| l >= 1));
                    assert!(region["startColumn"].as_u64().is_some_and(|c| c >= 1));
                }
            }
        }
    }
}

#[test]
fn sarif_has_the_required_structure() {
    let r = scan(&["--sarif", &hostile("persist-cron"), &hostile("dropper-elf")]);
    assert_eq!(r.code, 1, "{r:?}");
    let v: Value = serde_json::from_str(&r.stdout).expect("JSON");
    check_sarif(&v);
    let results = v["runs"][0]["results"].as_array().expect("results");
    assert!(
        results
            .iter()
            .any(|r| r["ruleId"] == "persistence-cron-fetch" && r["level"] == "error")
    );
    assert!(results.iter().any(|r| {
        r["ruleId"] == "dropper-executable"
            && r["locations"][0]["physicalLocation"]
                .get("region")
                .is_none()
    }));
    let clean = scan(&["--sarif", EXAMPLES]);
    assert_eq!(clean.code, 0);
    let v: Value = serde_json::from_str(&clean.stdout).expect("JSON");
    check_sarif(&v);
    assert_eq!(v["runs"][0]["results"].as_array().map(Vec::len), Some(0));
}

#[cfg(unix)]
#[test]
fn links_are_reported_not_followed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let skill = dir.path().join("s");
    fs::create_dir_all(&skill).expect("mkdir");
    fs::write(
        skill.join("SKILL.md"),
        "---\nname: s\ndescription: A skill.\n---\nbody\n",
    )
    .expect("write");
    std::os::unix::fs::symlink(Path::new("/etc/passwd"), skill.join("notes.md")).expect("symlink");
    let r = scan(&["--json", skill.to_str().expect("utf-8")]);
    let v: Value = serde_json::from_str(&r.stdout).expect("JSON");
    assert_eq!(v[0]["findings"][0]["rule"], "unread-file", "{r:?}");
    assert_eq!(v[0]["verdict"], "medium");
    assert_eq!(r.code, 0, "medium is below the default --fail-on high");
}
