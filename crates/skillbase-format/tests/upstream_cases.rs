//! The Agent Skills reference's own upstream tests (one case per `skills-ref` pytest test), read
//! from where the public data lives (`../shared/benchmarks/agentskills-upstream`, or the folder
//! SKILLBASE_UPSTREAM_CASES names at build time) — never copied into this repository. Each
//! case's input is run through our implementation and compared with what the reference itself
//! returned (`reference_observed.api`).

use serde_json::{Value, json};
use skillbase_format::YamlLimits;
use skillbase_format::frontmatter::SkillMd;
use skillbase_format::prompt;
use skillbase_format::skill_dir::find_skill_md;
use skillbase_format::validate::{Profile, ValidateOptions, validate_dir};
use std::path::{Path, PathBuf};

fn cases() -> Vec<(String, PathBuf, Value)> {
    let root = Path::new(env!("SKILLBASE_UPSTREAM_CASES_DIR"))
        .canonicalize()
        .expect("the upstream cases folder");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&root).expect("the upstream cases folder") {
        let dir = entry.unwrap().path();
        let Ok(text) = std::fs::read_to_string(dir.join("expected.json")) else {
            continue;
        };
        let v: Value = serde_json::from_str(&text).unwrap();
        out.push((
            dir.file_name().unwrap().to_string_lossy().into_owned(),
            dir,
            v,
        ));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Our message with the case folder's absolute path made relative, as the reference (run in
/// the case folder) printed it.
fn rel(message: &str, case: &Path) -> String {
    message.replace(&format!("{}/", case.display()), "")
}

fn error_of(e: &dyn std::fmt::Display, case: &Path) -> Value {
    json!({"message": rel(&e.to_string(), case)})
}

/// What our implementation returns for one case, in the shape of `reference_observed.api`.
fn run(op: &str, args: &Value, case: &Path) -> Value {
    let path = |k: &str| case.join(args[k].as_str().unwrap_or_default());
    match op {
        "validate" => {
            let opts = ValidateOptions {
                profile: Profile::Spec,
                ..ValidateOptions::default()
            };
            let r = validate_dir(&path("skill_dir"), &opts);
            json!({"errors": r.errors().map(|d| rel(&d.message, case)).collect::<Vec<_>>()})
        }
        "read_properties" => {
            match prompt::read_properties(&path("skill_dir"), &YamlLimits::default()) {
                Ok(p) => json!({"to_dict": p.to_json()}),
                Err(e) => error_of(&e, case),
            }
        }
        "parse_frontmatter" => {
            let text = std::fs::read_to_string(path("content_file")).unwrap();
            match SkillMd::parse(&text, &YamlLimits::default()) {
                Ok(md) => json!({
                    "metadata": skillbase_format::yaml::Node::Map(md.frontmatter.clone()).to_raw_json(),
                    "body": md.body(),
                }),
                Err(e) => error_of(&e, case),
            }
        }
        "to_prompt" => {
            let dirs: Vec<PathBuf> = args["skill_dirs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| case.join(d.as_str().unwrap()))
                .collect();
            match prompt::to_prompt(&dirs, &YamlLimits::default()) {
                Ok(text) => {
                    json!({"output": text.replace(&case.display().to_string(), "{CASE_DIR}")})
                }
                Err(e) => error_of(&e, case),
            }
        }
        "find_skill_md" => json!({
            "returns": find_skill_md(&path("skill_dir")).map(|p| rel(&p.display().to_string(), case))
        }),
        other => json!({"unknown operation": other}),
    }
}

/// Whether ours matches the reference's answer: the same fields, the same values; an invalid
/// YAML error matches by its first words (the YAML library's own text differs).
fn matches(want: &Value, got: &Value) -> bool {
    if let Some(msg) = want.get("message").and_then(Value::as_str) {
        let ours = got["message"].as_str().unwrap_or_default();
        return if msg.starts_with("Invalid YAML in frontmatter:") {
            ours.starts_with("Invalid YAML in frontmatter:")
        } else {
            ours == msg
        };
    }
    if let Some(errors) = want.get("errors") {
        let (w, g) = (errors.as_array().unwrap(), got["errors"].as_array());
        let Some(g) = g else { return false };
        return w.len() == g.len()
            && w.iter().zip(g).all(|(w, g)| {
                let (w, g) = (
                    w.as_str().unwrap_or_default(),
                    g.as_str().unwrap_or_default(),
                );
                w == g
                    || (w.starts_with("Invalid YAML in frontmatter:")
                        && g.starts_with("Invalid YAML in frontmatter:"))
            });
    }
    ["to_dict", "output", "returns", "metadata", "body"]
        .iter()
        .filter(|k| want.get(**k).is_some())
        .all(|k| {
            if *k == "body" {
                want[*k].as_str().map(str::trim) == got[*k].as_str()
            } else {
                want[*k] == got[*k]
            }
        })
}

#[test]
#[cfg_attr(
    not(skillbase_upstream_cases),
    ignore = "../shared/benchmarks/agentskills-upstream not found at build time; set SKILLBASE_UPSTREAM_CASES"
)]
fn upstream_cases_match_the_reference() {
    let all = cases();
    assert_eq!(all.len(), 40, "one case per upstream pytest test");
    let mut failures = Vec::new();
    for (name, dir, case) in &all {
        let op = case["operation"].as_str().unwrap();
        let want = &case["reference_observed"]["api"];
        let got = run(op, &case["args"], dir);
        if !matches(want, &got) {
            failures.push(format!(
                "{name} ({op}):\n  reference {want}\n  ours      {got}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
