//! Data-driven turn tests: each `fixtures/turns/NAME.toml` gives skills, an agent and a message;
//! `NAME.expected.json` is the whole turn the model is shown (prefix, injected bodies, catalog,
//! tools) and its report. Turn resolution is pure, so no database, runtime or server is involved:
//! the index is made from the fixture's SKILL.md texts.
//!
//! A fixture whose output changes on purpose is re-recorded with `SKILLBASE_BLESS=1 cargo test
//! -p skillbase-route --test turns`; read the diff of the `.expected.json` before committing it.
//! Without that variable a missing or different expectation fails the test.

use serde::Deserialize;
use skillbase_route::agent::{Agent, AgentConfig, AgentName, Scope};
use skillbase_route::index::{Index, SkillEntry};
use skillbase_route::requires::Provides;
use skillbase_route::turn::{OmissionDetail, TurnOptions, resolve};
use skillbase_route::view::AgentView;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The environment of a runtime without tools of its own: its built-ins' classes (as
/// `skillbase_runtime::Environment::builtins()` lists them), no upstream server, no program.
/// No fixture requires anything of the environment; a skill that did would be unmet here.
struct Builtins;

impl Provides for Builtins {
    fn class(&self, class: &str) -> bool {
        ["activation", "notes", "skills"].contains(&class)
    }
    fn server(&self, _server: &str) -> Option<&BTreeSet<String>> {
        None
    }
    fn program(&self, _program: &str) -> bool {
        false
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Fixture {
    message: String,
    agent: AgentConfig,
    #[serde(default)]
    options: Options,
    #[serde(default)]
    skill: Vec<FixtureSkill>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Options {
    max_cost: Option<skillbase_format::Cost>,
    catalog_budget: Option<u32>,
    context_budget: Option<u32>,
    #[serde(default)]
    paths: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FixtureSkill {
    /// `shared` (default) or `agent` (the fixture agent's own scope).
    #[serde(default)]
    scope: Option<String>,
    text: String,
}

const AGENT: &str = "fixture-agent";

fn run(path: &Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let f: Fixture = toml::from_str(&text).map_err(|e| e.to_string())?;
    let name = AgentName::parse(AGENT)?;
    let entries = f
        .skill
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let scope = match s.scope.as_deref() {
                None | Some("shared") => Scope::Shared,
                Some("agent") => Scope::Agent(name.clone()),
                Some(other) => return Err(format!("skill {}: unknown scope '{other}'", k + 1)),
            };
            SkillEntry::from_skill_md(scope, &s.text, "human:fixture")
                .map_err(|e| format!("skill {}: {e}", k + 1))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let index = Index::from_entries(entries, 1);
    let agent = Arc::new(Agent {
        name,
        config: f.agent.checked()?,
        version: 1,
    });
    let view = AgentView::build(agent, &index, &Builtins);
    let opts = TurnOptions {
        max_cost: f.options.max_cost,
        catalog_budget: f.options.catalog_budget,
        context_budget: f.options.context_budget,
        paths: f.options.paths.clone(),
    };
    let mut ctx = resolve(&view, &f.message, &opts);
    // The fixtures pin every omission by name.
    ctx.report.catalog.detail = OmissionDetail::Full;
    let mut out = serde_json::to_value(&ctx).map_err(|e| e.to_string())?;
    // What `load_skill` may load this turn, by name (the context keeps indices).
    out["loadable"] = ctx
        .loadable
        .iter()
        .map(|&i| view.skills[i].name().to_owned())
        .collect();
    Ok(out)
}

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/turns");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    v
}

#[test]
fn turns_match_their_fixtures() {
    let bless = std::env::var_os("SKILLBASE_BLESS").is_some();
    let all = fixtures();
    assert!(all.len() >= 9, "fixtures went missing: {all:?}");
    let mut failures = Vec::new();
    for path in &all {
        let got = match run(path) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        let pretty = serde_json::to_string_pretty(&got).expect("json") + "\n";
        let expected_path = path.with_extension("expected.json");
        if bless {
            std::fs::write(&expected_path, &pretty).expect("write expectation");
            continue;
        }
        match std::fs::read_to_string(&expected_path) {
            Ok(want) if want == pretty => {}
            Ok(want) => failures.push(format!(
                "{}: the turn differs from {}\n--- expected\n{want}\n--- got\n{pretty}",
                path.display(),
                expected_path.display()
            )),
            Err(_) => failures.push(format!(
                "{}: no {} (record it with SKILLBASE_BLESS=1)",
                path.display(),
                expected_path.display()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A fixture that cannot be read fails with what is wrong, not a panic.
#[test]
fn bad_fixtures_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (text, want) in [
        ("message = 1", "invalid type"),
        (
            "message = \"x\"\n[agent]\nskills = \"all\"\n[[skill]]\ntext = \"no frontmatter\"",
            "skill 1",
        ),
        (
            "message = \"x\"\n[agent]\nskills = \"all\"\n[[skill]]\nscope = \"elsewhere\"\ntext = \"\"",
            "unknown scope",
        ),
        (
            "message = \"x\"\n[agent]\nskills = \"all\"\n[agent.grants]\ntools = [\"Bad Class\"]",
            "grants",
        ),
    ] {
        let p = dir.path().join("f.toml");
        std::fs::write(&p, text).unwrap();
        let e = run(&p).unwrap_err();
        assert!(e.contains(want), "{text}: {e}");
    }
}
