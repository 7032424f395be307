//! The `skillbase` binary, run for real: exit codes, help, output formats and the scaffold.

use crate::common::{BIN, EXAMPLES, Run, s};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run_in(cwd: Option<&Path>, args: &[&str]) -> Run {
    let mut cmd = Command::new(BIN);
    cmd.args(args);
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().expect("run skillbase");
    Run {
        code: status.code().expect("exit code"),
        stdout: String::from_utf8(stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(stderr).expect("utf-8 stderr"),
    }
}

fn run(args: &[&str]) -> Run {
    run_in(None, args)
}

/// A folder `name` under `root` holding a SKILL.md with `text`.
fn skill(root: &Path, name: &str, text: &str) -> PathBuf {
    let dir = root.join(name);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("SKILL.md"), text).unwrap();
    dir
}

fn good(name: &str) -> String {
    format!("---\nname: {name}\ndescription: Does things. Use when asked.\n---\n# Body\n")
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

// ---------------------------------------------------------------------------------------------
// Help and usage

#[test]
fn help_for_every_command() {
    let r = run(&["--help"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for sub in ["validate", "read-properties", "to-prompt", "new", "digest"] {
        assert!(r.stdout.contains(sub), "{sub} missing from --help");
    }
    assert!(
        r.stdout
            .contains("Exit codes: 0 success, 1 invalid input, 2 usage")
    );
    for (sub, expect) in [
        ("validate", "--spec"),
        ("validate", "--format <FORMAT>"),
        ("read-properties", "<PATH>"),
        ("to-prompt", "<PATH>..."),
        ("new", "--dir <DIR>"),
        ("digest", "<DIR>"),
    ] {
        let r = run(&[sub, "--help"]);
        assert_eq!(r.code, 0, "{sub}: {}", r.stderr);
        assert!(
            r.stdout.contains(&format!("Usage: skillbase {sub}")),
            "{sub}: {}",
            r.stdout
        );
        assert!(r.stdout.contains(expect), "{sub}: {expect} in {}", r.stdout);
        let r = run(&["help", sub]);
        assert_eq!(r.code, 0);
    }
    let r = run(&["--version"]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.starts_with("skillbase "));
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &[][..],
        &["nope"],
        &["validate"],
        &["validate", "--format", "xml", "."],
        &["validate", "--bogus", "."],
        &["read-properties"],
        &["read-properties", "a", "b"],
        &["to-prompt"],
        &["new"],
    ] {
        let r = run(args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(!r.stderr.is_empty(), "{args:?}");
    }
}

#[test]
fn missing_paths_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing");
    let ok = skill(tmp.path(), "ok-skill", &good("ok-skill"));
    for args in [
        vec!["validate", s(&missing)],
        vec!["validate", s(&ok), s(&missing)],
        vec!["validate", "--format", "json", s(&missing)],
        vec!["read-properties", s(&missing)],
        vec!["to-prompt", s(&ok), s(&missing)],
    ] {
        let r = run(&args);
        assert_eq!(r.code, 2, "{args:?}");
        assert!(
            r.stderr
                .contains(&format!("Path '{}' does not exist", missing.display())),
            "{}",
            r.stderr
        );
        assert!(r.stdout.is_empty(), "{args:?}: {}", r.stdout);
    }
    let r = run(&["new", "x", "--dir", s(&missing)]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("is not a folder"), "{}", r.stderr);
}

// ---------------------------------------------------------------------------------------------
// validate

#[test]
fn validate_exit_codes_and_text() {
    let tmp = tempfile::tempdir().unwrap();
    let ok = skill(tmp.path(), "ok-skill", &good("ok-skill"));
    let bad = skill(tmp.path(), "bad-skill", &good("Bad_Name"));

    let r = run(&["validate", s(&ok)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, format!("Valid skill: {}\n", ok.display()));
    assert_eq!(r.stderr, "");

    // A SKILL.md path is shown as given.
    let md = ok.join("SKILL.md");
    let r = run(&["validate", s(&md)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, format!("Valid skill: {}\n", md.display()));

    let r = run(&["validate", s(&bad)]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .starts_with(&format!("Validation failed for {}:\n", bad.display())),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("  - Skill name 'Bad_Name' must be lowercase")
    );
    assert!(
        r.stderr.contains("    at SKILL.md:2 (name): "),
        "{}",
        r.stderr
    );

    // Any invalid path makes the run invalid; the valid one is still reported.
    let r = run(&["validate", s(&ok), s(&bad)]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("Valid skill:"));
    assert!(r.stderr.contains("Validation failed for"));

    // A folder holding both is searched.
    let r = run(&["validate", s(tmp.path())]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains(&format!("Valid skill: {}", ok.display())));
    assert!(
        r.stderr
            .contains(&format!("Validation failed for {}", bad.display()))
    );
}

#[test]
fn validate_warnings_do_not_fail() {
    let tmp = tempfile::tempdir().unwrap();
    let text = "---\nname: warn-skill\ndescription: Does things.\nflavour: x\n---\n# Body\n";
    let dir = skill(tmp.path(), "warn-skill", text);
    let r = run(&["validate", s(&dir)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("Valid skill:"));
    assert!(r.stderr.contains("Warnings for"), "{}", r.stderr);
    assert!(r.stderr.contains("Unknown field 'flavour'"));
    // In the specification profile an unknown key is an error.
    let r = run(&["validate", "--spec", s(&dir)]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("Unexpected fields in frontmatter: flavour.")
    );
}

#[test]
fn spec_profile_refuses_skillbase_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let text = "---\nname: sb-skill\ndescription: Does things.\ncost: seconds\n---\n# Body\n";
    let dir = skill(tmp.path(), "sb-skill", text);
    assert_eq!(run(&["validate", s(&dir)]).code, 0);
    let r = run(&["validate", "--spec", s(&dir)]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("Unexpected fields in frontmatter: cost."));
}

#[test]
fn folder_without_a_skill_is_invalid_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    fs::create_dir_all(empty.join("sub/deeper")).unwrap();
    fs::write(empty.join("sub/README.md"), "# not a skill\n").unwrap();
    let r = run(&["validate", s(&empty)]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert!(
        r.stderr
            .contains(&format!("Validation failed for {}", empty.display()))
    );
    assert!(r.stderr.contains("No skill found"), "{}", r.stderr);

    // A file that is not a SKILL.md is no skill either.
    let readme = empty.join("sub/README.md");
    let r = run(&["validate", s(&readme)]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("No skill found"));

    let r = run(&["validate", "--format", "json", s(&empty)]);
    assert_eq!(r.code, 1);
    let v = json(&r.stdout);
    assert_eq!(v[0]["valid"], false);
    assert_eq!(v[0]["name"], Value::Null);
    assert!(
        v[0]["errors"][0]
            .as_str()
            .unwrap()
            .contains("No skill found")
    );
}

#[test]
fn validate_json_shape() {
    let tmp = tempfile::tempdir().unwrap();
    let ok = skill(tmp.path(), "ok-skill", &good("ok-skill"));
    let warn = skill(
        tmp.path(),
        "warn-skill",
        "---\nname: warn-skill\ndescription: Does things.\nflavour: x\n---\n# Body\n",
    );
    let bad = skill(tmp.path(), "bad-skill", "---\nname: [oops\n---\n");
    let r = run(&["validate", "--format", "json", s(&ok), s(&warn), s(&bad)]);
    assert_eq!(r.code, 1);
    assert_eq!(r.stderr, "");
    let v = json(&r.stdout);
    let items = v.as_array().expect("an array");
    assert_eq!(items.len(), 3);
    for item in items {
        for key in ["path", "name", "valid", "errors", "warnings"] {
            assert!(item.get(key).is_some(), "{key} missing in {item}");
        }
        assert!(item["path"].is_string());
        assert!(item["valid"].is_boolean());
        assert!(item["errors"].is_array() && item["warnings"].is_array());
    }
    assert_eq!(items[0]["path"], s(&ok));
    assert_eq!(items[0]["name"], "ok-skill");
    assert_eq!(items[0]["valid"], true);
    assert_eq!(items[0]["errors"], Value::Array(vec![]));
    assert_eq!(items[0]["warnings"], Value::Array(vec![]));
    assert_eq!(items[1]["valid"], true);
    assert_eq!(items[1]["warnings"].as_array().unwrap().len(), 1);
    assert_eq!(items[2]["path"], s(&bad));
    assert_eq!(items[2]["valid"], false);
    assert_eq!(items[2]["name"], Value::Null);
    let errs = items[2]["errors"].as_array().unwrap();
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0]
            .as_str()
            .unwrap()
            .starts_with("Invalid YAML in frontmatter"),
        "{errs:?}"
    );

    // All valid: exit 0.
    let r = run(&["validate", "--format", "json", s(&ok)]);
    assert_eq!(r.code, 0);
    assert_eq!(json(&r.stdout).as_array().unwrap().len(), 1);
}

#[test]
fn validate_hostile_files_exit_1_with_one_error() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: [(&str, &[u8], &str); 3] = [
        ("empty", b"", "SKILL.md must start with YAML frontmatter"),
        (
            "latin1",
            b"---\nname: latin1\ndescription: caf\xe9\n---\n",
            "SKILL.md is not valid UTF-8",
        ),
        ("nul", &[0u8; 64], "must start with YAML frontmatter"),
    ];
    for (name, bytes, expect) in cases {
        let dir = tmp.path().join(name);
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("SKILL.md"), bytes).unwrap();
        let r = run(&["validate", "--format", "json", s(&dir)]);
        assert_eq!(r.code, 1, "{name}");
        let v = json(&r.stdout);
        let errs = v[0]["errors"].as_array().unwrap();
        assert_eq!(errs.len(), 1, "{name}: {errs:?}");
        assert!(
            errs[0].as_str().unwrap().contains(expect),
            "{name}: {errs:?}"
        );
        assert_eq!(v[0]["diagnostics"][0]["file"], "SKILL.md");
    }
    let big = tmp.path().join("big");
    fs::create_dir(&big).unwrap();
    fs::File::create(big.join("SKILL.md"))
        .unwrap()
        .set_len(100 * 1024 * 1024)
        .unwrap();
    let r = run(&["validate", s(&big)]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("SKILL.md is 104857600 bytes"),
        "{}",
        r.stderr
    );
}

#[test]
fn examples_all_validate_without_warnings() {
    let r = run(&["validate", EXAMPLES]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stderr, "", "examples print warnings or errors");
    let valid = r
        .stdout
        .lines()
        .filter(|l| l.starts_with("Valid skill: "))
        .count();
    assert!(valid >= 7, "{}", r.stdout);

    let r = run(&["validate", "--format", "json", EXAMPLES]);
    assert_eq!(r.code, 0);
    for item in json(&r.stdout).as_array().unwrap() {
        assert_eq!(item["valid"], true, "{item}");
        assert_eq!(item["warnings"], Value::Array(vec![]), "{item}");
        let name = item["name"].as_str().unwrap();
        assert!(item["path"].as_str().unwrap().ends_with(name));
    }
}

#[test]
fn portable_says_per_agent_what_it_rejects_or_ignores() {
    let tmp = tempfile::tempdir().unwrap();
    let claude = "---\nname: deploy\ndescription: Deploys. Use when asked.\ndisable-model-invocation: true\nmodel: sonnet\ntriggers:\n  - ship it\n---\nDeploy $ARGUMENTS.\n";
    let dir = skill(tmp.path(), "deploy", claude);
    let r = run(&["validate", "--portable", s(&dir)]);
    // The reference validator rejects the skill: exit 1, though Skillbase finds it valid.
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("Valid skill: "), "{}", r.stdout);
    for want in [
        "  Claude Code: loads it, ignores `triggers`\n",
        "  Cursor: loads it, ignores `model`, `triggers`\n",
        "  Codex: loads it, ignores `disable-model-invocation`, `model`, `triggers`\n",
        "  skills-ref: rejects it\n    - Unexpected fields in frontmatter: disable-model-invocation, model, triggers.",
    ] {
        assert!(r.stdout.contains(want), "{want}\n{}", r.stdout);
    }
    // Only the agents named: none rejects it, so exit 0.
    let r = run(&[
        "validate",
        "--portable",
        "--agent-target",
        "claude-code,codex",
        s(&dir),
    ]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        !r.stdout.contains("skills-ref") && !r.stdout.contains("Cursor"),
        "{}",
        r.stdout
    );
    // Skillbase's keys under metadata.skillbase and a spec-only frontmatter: everyone loads it.
    let nested = "---\nname: nested\ndescription: Nested keys. Use when asked.\nmetadata:\n  skillbase:\n    triggers:\n      - ship\n---\nBody.\n";
    let dir2 = skill(tmp.path(), "nested", nested);
    let r = run(&["validate", "--portable", "--format", "json", s(&dir2)]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let v = json(&r.stdout);
    let targets = v[0]["portable"].as_array().unwrap();
    assert_eq!(targets.len(), 7);
    assert_eq!(targets[6]["target"], "skills-ref");
    assert!(targets.iter().all(|t| t["rejects"] == json("[]")), "{v}");
    assert_eq!(targets[1]["ignores"], json("[\"metadata\"]"), "{v}");
    // Without --portable, the JSON has no such key; an unknown target is a usage error.
    let r = run(&["validate", "--format", "json", s(&dir2)]);
    assert!(json(&r.stdout)[0].get("portable").is_none());
    let r = run(&[
        "validate",
        "--portable",
        "--agent-target",
        "claude",
        s(&dir2),
    ]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("unknown agent target 'claude'"),
        "{}",
        r.stderr
    );
    assert_eq!(
        run(&["validate", "--agent-target", "codex", s(&dir2)]).code,
        2
    );
}

#[test]
fn codex_openai_yaml_is_read_and_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = skill(tmp.path(), "codexy", &good("codexy"));
    fs::create_dir_all(dir.join("agents")).unwrap();
    let yaml = dir.join("agents/openai.yaml");
    fs::write(
        &yaml,
        "interface:\n  display_name: \"Codexy\"\ndependencies:\n  tools:\n    - type: \"mcp\"\n      value: \"github\"\n      url: \"https://example.com/mcp\"\npolicy:\n  allow_implicit_invocation: false\n",
    )
    .unwrap();
    let r = run(&["validate", s(&dir)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("agents/openai.yaml: `dependencies.tools[0]` 'github': `transport` and `url` are not used"),
        "{}",
        r.stderr
    );
    let r = run(&[
        "validate",
        "--portable",
        "--agent-target",
        "codex,claude-code",
        s(&dir),
    ]);
    assert!(
        r.stdout
            .contains("  Claude Code: loads it, ignores `agents/openai.yaml`"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("  Codex: reads every key"),
        "{}",
        r.stdout
    );
    // Malformed, hostile and oversized files: one error naming the file (and the key).
    for (text, want) in [
        (
            "policy:\n  allow_implicit_invocation: sometimes\n",
            "agents/openai.yaml: `policy.allow_implicit_invocation` must be true or false",
        ),
        (
            "a: &x [1]\nb: *x\n",
            "agents/openai.yaml: anchors and aliases",
        ),
        ("interface: [\n", "agents/openai.yaml: "),
    ] {
        fs::write(&yaml, text).unwrap();
        let r = run(&["validate", "--format", "json", s(&dir)]);
        assert_eq!(r.code, 1, "{text}");
        let errors = json(&r.stdout)[0]["errors"].clone();
        assert!(
            errors[0].as_str().unwrap().starts_with(want),
            "{text}: {errors}"
        );
    }
    fs::write(&yaml, "x".repeat(70_000)).unwrap();
    let r = run(&["validate", s(&dir)]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("agents/openai.yaml is 70000 bytes, over the 65536-byte limit"),
        "{}",
        r.stderr
    );
    fs::write(&yaml, b"\xff\xfe").unwrap();
    assert!(
        run(&["validate", s(&dir)])
            .stderr
            .contains("agents/openai.yaml is not valid UTF-8")
    );
    #[cfg(unix)]
    {
        fs::remove_file(&yaml).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", &yaml).unwrap();
        let r = run(&["validate", s(&dir)]);
        assert_eq!(r.code, 1);
        assert!(
            r.stderr.contains("agents/openai.yaml is not a plain file"),
            "{}",
            r.stderr
        );
    }
}

// ---------------------------------------------------------------------------------------------
// read-properties and to-prompt

#[test]
fn read_properties_json() {
    let tmp = tempfile::tempdir().unwrap();
    let text = "---\nname: caf\u{e9}-skill\ndescription: Caf\u{e9} \u{2615} \u{1d11e} \"quoted\"\nlicense: MIT\nmetadata:\n  version: \"1.0\"\n---\n# Body\n";
    let dir = skill(tmp.path(), "caf\u{e9}-skill", text);
    let r = run(&["read-properties", s(&dir)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let expected = "{\n  \"name\": \"caf\\u00e9-skill\",\n  \"description\": \"Caf\\u00e9 \\u2615 \\ud834\\udd1e \\\"quoted\\\"\",\n  \"license\": \"MIT\",\n  \"metadata\": {\n    \"version\": \"1.0\"\n  }\n}\n";
    assert_eq!(r.stdout, expected);
    assert!(r.stdout.is_ascii());
    // The SKILL.md path works the same.
    let r2 = run(&["read-properties", s(&dir.join("SKILL.md"))]);
    assert_eq!(r2.stdout, expected);

    // Errors exit 1.
    let bad = skill(tmp.path(), "bad", "---\nname: x\n---\n");
    let r = run(&["read-properties", s(&bad)]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        "Error: Missing required field in frontmatter: description\n"
    );
    let r = run(&["read-properties", s(tmp.path())]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("SKILL.md not found in"), "{}", r.stderr);
}

#[test]
fn to_prompt_output() {
    let tmp = tempfile::tempdir().unwrap();
    let a = skill(tmp.path(), "a-skill", &good("a-skill"));
    let b = skill(
        tmp.path(),
        "b-skill",
        "---\nname: b-skill\ndescription: Compare <a> & \"b\"\n---\n",
    );
    let r = run(&["to-prompt", s(&a), s(&b.join("SKILL.md"))]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let loc = |d: &Path| d.join("SKILL.md").canonicalize().unwrap();
    let expected = format!(
        "<available_skills>\n<skill>\n<name>\na-skill\n</name>\n<description>\nDoes things. Use when asked.\n</description>\n<location>\n{}\n</location>\n</skill>\n<skill>\n<name>\nb-skill\n</name>\n<description>\nCompare &lt;a&gt; &amp; &quot;b&quot;\n</description>\n<location>\n{}\n</location>\n</skill>\n</available_skills>\n",
        loc(&a).display(),
        loc(&b).display()
    );
    assert_eq!(r.stdout, expected);

    // One bad skill fails the whole block.
    let bad = skill(tmp.path(), "bad", "no frontmatter\n");
    let r = run(&["to-prompt", s(&a), s(&bad)]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.is_empty());
    assert!(r.stderr.starts_with("Error: "), "{}", r.stderr);

    let r = run(&["to-prompt", EXAMPLES]);
    assert_eq!(r.code, 1, "a folder of skills is not a skill folder");
}

// ---------------------------------------------------------------------------------------------
// new

#[test]
fn new_scaffolds_a_valid_skill() {
    let tmp = tempfile::tempdir().unwrap();
    let r = run(&["new", "my-skill", "--dir", s(tmp.path())]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let dir = tmp.path().join("my-skill");
    assert!(
        r.stdout
            .contains(&format!("Created {}", dir.join("SKILL.md").display()))
    );
    let text = fs::read_to_string(dir.join("SKILL.md")).unwrap();
    for key in [
        "name:",
        "description:",
        "# license:",
        "# compatibility:",
        "# allowed-tools:",
        "# metadata:",
        "# triggers:",
        "# companions:",
        "# inputs:",
        "# capabilities:",
        "# cost:",
    ] {
        assert!(text.contains(key), "template lacks {key}");
    }
    for profile in [&[][..], &["--spec"]] {
        let mut args = vec!["validate"];
        args.extend_from_slice(profile);
        args.push(s(&dir));
        let r = run(&args);
        assert_eq!(r.code, 0, "{profile:?}: {}", r.stderr);
        assert_eq!(r.stderr, "", "{profile:?}: the template warns");
    }
    let r = run(&["read-properties", s(&dir)]);
    assert_eq!(r.code, 0);
    assert_eq!(json(&r.stdout)["name"], "my-skill");
}

#[test]
fn new_defaults_to_the_current_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let r = run_in(Some(tmp.path()), &["new", "here-skill"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(tmp.path().join("here-skill/SKILL.md").is_file());
    let r = run_in(Some(tmp.path()), &["validate", "here-skill"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn new_uncommented_skillbase_keys_validate() {
    // Uncommenting every Skillbase example in the template gives a valid skill (default profile).
    let tmp = tempfile::tempdir().unwrap();
    assert_eq!(run(&["new", "full-skill", "--dir", s(tmp.path())]).code, 0);
    let path = tmp.path().join("full-skill/SKILL.md");
    let text = fs::read_to_string(&path).unwrap();
    let mut out = String::new();
    let mut in_frontmatter = 0;
    for line in text.lines() {
        if line == "---" {
            in_frontmatter += 1;
        }
        let uncomment = in_frontmatter == 1
            && line.starts_with("# ")
            && !line.starts_with("# ---")
            && (line[2..].starts_with(char::is_lowercase) && line[2..].contains(':')
                || line.starts_with("#  "));
        if uncomment {
            out.push_str(&line[2..]);
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    fs::write(&path, &out).unwrap();
    let r = run(&["validate", s(path.parent().unwrap())]);
    assert_eq!(r.code, 0, "{out}\n{}", r.stderr);
    assert_eq!(r.stderr, "", "{out}");
}

#[test]
fn new_refuses_bad_names_and_existing_folders() {
    let tmp = tempfile::tempdir().unwrap();
    for bad in ["Bad_Name", "-x", "a--b", "", "has space", "../escape"] {
        let r = run(&["new", "--dir", s(tmp.path()), "--", bad]);
        assert_eq!(r.code, 1, "{bad:?}: {}", r.stderr);
        assert!(r.stderr.starts_with("Error: "), "{bad:?}: {}", r.stderr);
    }
    assert_eq!(
        fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "nothing created"
    );

    assert_eq!(run(&["new", "taken", "--dir", s(tmp.path())]).code, 0);
    fs::write(tmp.path().join("taken/extra.md"), "keep me").unwrap();
    let r = run(&["new", "taken", "--dir", s(tmp.path())]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("already exists"), "{}", r.stderr);
    assert_eq!(
        fs::read_to_string(tmp.path().join("taken/extra.md")).unwrap(),
        "keep me"
    );
    // A file in the way is refused too.
    fs::write(tmp.path().join("file-skill"), "x").unwrap();
    let r = run(&["new", "file-skill", "--dir", s(tmp.path())]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("already exists"));
}

#[test]
fn listing_for_an_unknown_agent_is_an_error_not_the_shared_list() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db.sqlite");
    let r = run(&[
        "--db",
        s(&db),
        "--seed",
        EXAMPLES,
        "list",
        "--agent",
        "ghost",
    ]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("no agent 'ghost'"), "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
}

#[test]
fn a_closed_pipe_ends_the_program_quietly() {
    use std::io::Read;
    let tmp = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(["validate", EXAMPLES, EXAMPLES, EXAMPLES])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .current_dir(tmp.path())
        .spawn()
        .unwrap();
    // Read nothing and close stdout at once, like `| head -0`.
    drop(child.stdout.take());
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    child.wait().unwrap();
    assert!(!err.contains("panicked"), "{err}");
}

/// README's content digest, computed here from its definition with sha2 alone: per file in the
/// UTF-8 byte order of its path, `u64be(len(path)) ‖ path ‖ sha256(content) ‖ exec byte`.
pub(crate) fn readme_digest(files: &[(&str, &[u8], bool)]) -> String {
    use sha2::{Digest as _, Sha256};
    let mut sorted = files.to_vec();
    sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut h = Sha256::new();
    for (path, bytes, exec) in sorted {
        h.update((path.len() as u64).to_be_bytes());
        h.update(path.as_bytes());
        h.update(Sha256::digest(bytes));
        h.update([u8::from(exec)]);
    }
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

#[test]
fn digest_prints_the_readme_digest_of_a_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let md = good("tool-kit");
    let dir = skill(tmp.path(), "tool-kit", &md);
    fs::create_dir_all(dir.join("scripts")).unwrap();
    fs::write(dir.join("scripts/run.sh"), "#!/bin/sh\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(
            dir.join("scripts/run.sh"),
            fs::Permissions::from_mode(0o755),
        )
        .unwrap();
    }
    let want = readme_digest(&[
        ("SKILL.md", md.as_bytes(), false),
        ("scripts/run.sh", b"#!/bin/sh\n", cfg!(unix)),
    ]);
    let r = run(&["digest", s(&dir)]);
    assert_eq!((r.code, r.stdout.trim()), (0, want.as_str()), "{r:?}");
    // Its SKILL.md names the folder too.
    let r = run(&["digest", s(&dir.join("SKILL.md"))]);
    assert_eq!(r.stdout.trim(), want, "{r:?}");
    let v = json(&run(&["digest", "--json", s(&dir)]).stdout);
    assert_eq!(v["digest"], want.as_str());
    assert_eq!(v["files"][1]["path"], "scripts/run.sh");
    assert_eq!(v["files"][1]["executable"], cfg!(unix));
    assert_eq!(v["files"][0]["size"], md.len());
}

#[test]
fn digest_refuses_what_is_not_a_safe_skill_folder() {
    let tmp = tempfile::tempdir().unwrap();
    // Missing: a usage error.
    let r = run(&["digest", s(&tmp.path().join("nope"))]);
    assert_eq!(r.code, 2, "{r:?}");
    // No SKILL.md.
    let empty = tmp.path().join("empty");
    fs::create_dir_all(&empty).unwrap();
    let r = run(&["digest", s(&empty)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("no SKILL.md"), "{r:?}");
    assert!(r.stdout.is_empty());
    // A control character in a file name: refused, named escaped (never raw on the terminal).
    let bad = skill(tmp.path(), "bad", &good("bad"));
    fs::write(bad.join("evil\u{1b}[31m.md"), "x").unwrap();
    let r = run(&["digest", s(&bad)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr.contains("control characters are not allowed"),
        "{r:?}"
    );
    assert!(!r.stderr.contains('\u{1b}'), "{r:?}");
    // Too many files.
    let big = skill(tmp.path(), "big", &good("big"));
    for i in 0..512 {
        fs::write(big.join(format!("f{i:03}.md")), "x").unwrap();
    }
    let r = run(&["digest", s(&big)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.contains("more than 512 files"), "{r:?}");
    // A link leaving the folder.
    #[cfg(unix)]
    {
        let link = skill(tmp.path(), "link", &good("link"));
        std::os::unix::fs::symlink("/etc/passwd", link.join("passwd")).unwrap();
        let r = run(&["digest", s(&link)]);
        assert_eq!(r.code, 1, "{r:?}");
        assert!(r.stderr.contains("leaves the skill folder"), "{r:?}");
    }
}

/// `skillbase model status` without the models: each (the reranker too) is reported missing
/// (exit 1), and the instruction sets this CPU gives the forward pass are named either way.
#[test]
fn model_status_names_what_is_missing_and_the_cpu_kernels() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("models/all-MiniLM-L6-v2");
    let r = run(&["model", "status", "--dir", missing.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.contains("all-MiniLM-L6-v2 (") && r.stdout.contains("not available"),
        "{r:?}"
    );
    assert!(r.stdout.contains("multilingual-e5-small ("), "{r:?}");
    // The reranker is looked for beside the encoders, and said missing with how to get it.
    let reranker = r
        .stdout
        .lines()
        .find(|l| l.starts_with("ms-marco-MiniLM-L-12-v2 (reranking the first candidates): "))
        .unwrap_or_else(|| panic!("{r:?}"));
    assert!(
        reranker.contains("not available") && reranker.contains("skillbase model pull"),
        "{reranker}"
    );
    let cpu = r
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("this CPU: integer products with "))
        .unwrap_or_else(|| panic!("{r:?}"));
    let (products, elementwise) = cpu.split_once(", element-wise work with ").unwrap();
    assert!(
        [
            "AVX512-VNNI",
            "AVX-VNNI",
            "AVX-512BW",
            "AVX2",
            "portable loop"
        ]
        .contains(&products),
        "{cpu}"
    );
    assert!(
        ["AVX-512", "AVX2 and FMA", "portable code"].contains(&elementwise),
        "{cpu}"
    );
    assert!(!dir.path().join("models").exists(), "status wrote nothing");
}
