//! `skillbase turn` end to end: the real binary against a SQLite file in a temporary folder,
//! with `--json` and with the text report.

use crate::common::{Run, pairs, skill_md, skillbase};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Stdio;

struct Sb {
    dir: tempfile::TempDir,
}

impl Sb {
    fn new() -> Sb {
        Sb {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn db(&self) -> PathBuf {
        self.path("skillbase.db")
    }

    fn run(&self, args: &[&str]) -> Run {
        let out = skillbase(self.db(), self.dir.path())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
        }
    }

    #[track_caller]
    fn ok(&self, args: &[&str]) -> Run {
        let r = self.run(args);
        assert_eq!(r.code, 0, "skillbase {args:?} failed: {r:?}");
        assert!(!r.stderr.contains("panicked"), "{r:?}");
        r
    }

    #[track_caller]
    fn json(&self, args: &[&str]) -> Value {
        let r = self.ok(args);
        serde_json::from_str(&r.stdout)
            .unwrap_or_else(|e| panic!("skillbase {args:?} printed invalid JSON ({e}): {r:?}"))
    }

    #[track_caller]
    fn fails(&self, args: &[&str]) -> String {
        let r = self.run(args);
        assert_ne!(r.code, 0, "skillbase {args:?} should fail: {r:?}");
        assert!(r.stdout.is_empty(), "{r:?}");
        assert!(!r.stderr.contains("panicked"), "{r:?}");
        r.stderr
    }

    /// A seed folder of skills, an agent `support` (eager `hello`), and the workspace path.
    fn setup(&self) -> PathBuf {
        let seed = self.path("seed");
        write_skill(&seed, "hello", "", "Greet the user by name.", &[]);
        write_skill(
            &seed,
            "refund",
            "triggers: [refund, money back]\ncompanions: [refund-policy]\n",
            "Issue the refund with scripts/refund.sh.",
            &[("scripts/refund.sh", "#!/bin/sh\necho refund\n")],
        );
        write_skill(&seed, "refund-policy", "", "Refunds within 30 days.", &[]);
        write_skill(&seed, "notes", "", "Take notes.", &[]);
        write_skill(
            &seed,
            "slow-report",
            "cost: tens_of_seconds\n",
            "Build the report.",
            &[],
        );
        let seed_s = seed.to_str().unwrap();
        self.ok(&[
            "--seed", seed_s, "agent", "create", "support", "--skills", "all", "--eager", "hello",
        ]);
        self.path("ws")
    }
}

fn write_skill(parent: &Path, name: &str, fm: &str, body: &str, files: &[(&str, &str)]) {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), skill_md(name, fm, body)).unwrap();
    for (p, c) in files {
        let f = dir.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, c).unwrap();
    }
}

fn reasons(v: &Value) -> Vec<(String, String)> {
    v["context"]["report"]["activated"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["name"].as_str().unwrap().to_owned(),
                a["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn strs(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn turn_json_end_to_end() {
    let sb = Sb::new();
    let ws = sb.setup();
    let ws_s = ws.to_str().unwrap();
    let v = sb.json(&[
        "turn",
        "--agent",
        "support",
        "-m",
        "I want my MONEY back",
        "--session",
        "s1",
        "--workspace",
        ws_s,
        "--json",
    ]);
    assert_eq!(v["agent"], "support");
    assert_eq!(v["session"], "s1");
    assert_eq!(
        reasons(&v),
        pairs(&[
            ("hello", "eager"),
            ("refund", "trigger:money back"),
            ("refund-policy", "companion:refund"),
        ])
    );
    let ctx = &v["context"];
    assert!(
        ctx["prefix"]
            .as_str()
            .unwrap()
            .contains("Greet the user by name.")
    );
    let injected = ctx["injected"].as_str().unwrap();
    assert!(injected.contains("Issue the refund") && injected.contains("Refunds within 30 days."));
    assert!(injected.contains("<file>scripts/refund.sh</file>"));
    let catalog = ctx["catalog"].as_str().unwrap();
    assert!(catalog.contains("<name>notes</name>") && catalog.contains("<name>slow-report</name>"));
    assert!(!catalog.contains("<name>hello</name>") && !catalog.contains("<name>refund</name>"));
    let tools = ctx["tools"].as_array().unwrap();
    // The turn's skill tools come first, then the rest of the offered set (the runtime's own
    // tools; this agent is granted no tool class, so every other tool is withheld).
    assert_eq!(tools[0]["name"], "load_skill");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"skill_finish"), "{names:?}");
    assert!(!names.contains(&"skill_create"), "{names:?}");
    // Every non-eager skill is loadable, including the ones injected this turn (loading keeps
    // them for the session); the eager one is not.
    assert_eq!(
        strs(&tools[0]["parameters"]["properties"]["name"]["enum"]),
        ["notes", "refund", "refund-policy", "slow-report"]
    );
    let report = &ctx["report"];
    assert_eq!(strs(&report["catalog"]["full"]), ["notes", "slow-report"]);
    let t = &report["tokens"];
    let sum = ["eager", "injected", "catalog", "tools"]
        .iter()
        .map(|k| t[*k].as_u64().unwrap())
        .sum::<u64>();
    assert_eq!(t["total"].as_u64().unwrap(), sum);
    assert!(t["eager"].as_u64().unwrap() > 0 && t["injected"].as_u64().unwrap() > 0);
    assert!(
        ctx.get("loadable").is_none(),
        "internal indices are not printed"
    );
    // The triggered skill's files were written to the workspace.
    let skills = ws.join("support/s1/skills");
    let written: Vec<String> = std::fs::read_dir(&skills)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let refund_dir = written
        .iter()
        .find(|n| n.ends_with("-refund"))
        .unwrap_or_else(|| panic!("{written:?}"));
    assert_eq!(refund_dir.len(), 8 + "-refund".len());
    assert_eq!(
        std::fs::read_to_string(skills.join(refund_dir).join("scripts/refund.sh")).unwrap(),
        "#!/bin/sh\necho refund\n"
    );

    // Next turn in the same session, without the word: nothing injected.
    let v = sb.json(&[
        "turn",
        "--agent",
        "support",
        "-m",
        "thanks",
        "--session",
        "s1",
        "--workspace",
        ws_s,
        "--json",
    ]);
    assert_eq!(reasons(&v), pairs(&[("hello", "eager")]));
    assert!(v["context"]["injected"].is_null());
    assert_eq!(
        strs(&v["context"]["tools"][0]["parameters"]["properties"]["name"]["enum"]),
        ["notes", "refund", "refund-policy", "slow-report"]
    );

    // --max-cost: the slow skill is left out of catalog and enum, with the reason.
    let v = sb.json(&[
        "turn",
        "--agent",
        "support",
        "-m",
        "thanks",
        "--max-cost",
        "immediate",
        "--workspace",
        ws_s,
        "--json",
    ]);
    assert!(v["session"].as_str().unwrap().starts_with("cli-"));
    // By default a summary: how many, why, and how to get the list.
    let summary = &v["context"]["report"]["catalog"]["omitted"];
    assert_eq!(summary["count"], 1);
    assert!(
        summary["by_reason"][0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("cost:")
    );
    assert!(
        summary["list"]
            .as_str()
            .unwrap()
            .contains("omissions = full")
    );
    let v = sb.json(&[
        "turn",
        "--agent",
        "support",
        "-m",
        "thanks",
        "--max-cost",
        "immediate",
        "--workspace",
        ws_s,
        "--json",
        "--omissions",
        "full",
    ]);
    let omitted = v["context"]["report"]["catalog"]["omitted"]
        .as_array()
        .unwrap();
    assert_eq!(omitted.len(), 1);
    assert_eq!(omitted[0]["name"], "slow-report");
    assert!(omitted[0]["reason"].as_str().unwrap().starts_with("cost:"));
    assert_eq!(
        strs(&v["context"]["tools"][0]["parameters"]["properties"]["name"]["enum"]),
        ["notes", "refund", "refund-policy"]
    );

    // The turns were recorded in the store's events, with the session.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = skillbase_store::Store::open(&skillbase_store::DbUrl::Sqlite(sb.db()))
            .await
            .unwrap();
        let events = store
            .events(&skillbase_store::EventFilter {
                session: Some("s1".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "turn",
                "skill_activated",
                "skill_activated",
                "skill_activated",
                "turn",
                "skill_activated"
            ]
        );
        assert!(events.iter().all(|e| e.agent.as_deref() == Some("support")));
        let support = skillbase_store::AgentName::parse("support").unwrap();
        let s = store.session(&support, "s1").await.unwrap().unwrap();
        assert_eq!(s.agent, "support");
        store.close().await;
    });
}

#[test]
fn turn_text_prints_the_report() {
    let sb = Sb::new();
    let ws = sb.setup();
    let ws_s = ws.to_str().unwrap();
    let r = sb.ok(&[
        "turn",
        "--agent",
        "support",
        "-m",
        "a refund please",
        "--session",
        "t1",
        "--workspace",
        ws_s,
    ]);
    let out = &r.stdout;
    assert!(
        out.starts_with("agent support · session t1 · message: \"a refund please\""),
        "{out}"
    );
    for needle in [
        "── prompt prefix: eager skills, same every turn (",
        "── injected for this turn only (",
        "── catalog (",
        "── tools (~",
        "── report ",
        "reached the prompt:",
        "catalog: 2 in full, 0 by name only, 0 left out",
        "load_skill: Load a skill's full instructions",
        "tokens: eager ",
        " · injected ",
        " · total ",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
    }
    let line = |name: &str, reason: &str| {
        out.lines()
            .any(|l| l.trim_start().starts_with(name) && l.contains(reason) && l.contains("rev 1"))
    };
    assert!(line("hello", "eager"), "{out}");
    assert!(line("refund ", "trigger:refund"), "{out}");
    assert!(line("refund-policy", "companion:refund"), "{out}");

    // Budgets from the command line: evictions and a truncated catalog are reported.
    let r = sb.ok(&[
        "turn",
        "--agent",
        "support",
        "-m",
        "a refund please",
        "--session",
        "t2",
        "--workspace",
        ws_s,
        "--context-budget",
        "1",
        "--catalog-budget",
        "1",
        "--max-cost",
        "immediate",
    ]);
    let out = &r.stdout;
    for needle in [
        "reached the prompt: nothing",
        "evicted by the context budget:",
        "  hello  (budget: eager",
        "  refund  (budget: trigger:refund",
        "  refund-policy  (budget: companion:refund",
        "(ranked by relevance)",
        "  slow-report  (cost: tens_of_seconds is slower than this turn's maximum immediate)",
        "(none: no trigger matched)",
        "tokens: eager 0 · injected 0",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
    }

    // A long message is shortened in the header.
    let long = "word ".repeat(20_000);
    let r = sb.ok(&[
        "turn",
        "--agent",
        "support",
        "-m",
        &long,
        "--workspace",
        ws_s,
    ]);
    assert!(r.stdout.lines().next().unwrap().ends_with("…"));
    assert!(r.stdout.lines().next().unwrap().len() < 300);

    // The eager skill names not allowed are reported.
    sb.ok(&["agent", "set", "support", "--eager", "hello,ghost"]);
    let r = sb.ok(&[
        "turn",
        "--agent",
        "support",
        "-m",
        "hi",
        "--workspace",
        ws_s,
    ]);
    assert!(
        r.stdout.contains("eager but not allowed (ignored): ghost"),
        "{}",
        r.stdout
    );
}

#[test]
fn turn_bad_input() {
    let sb = Sb::new();
    let ws = sb.setup();
    let ws_s = ws.to_str().unwrap();
    let err = sb.fails(&["turn", "--agent", "nobody", "-m", "hi", "--workspace", ws_s]);
    assert!(err.contains("no agent 'nobody'"), "{err}");
    assert!(err.contains("skillbase agent create nobody"), "{err}");
    let err = sb.fails(&["turn", "--agent", "Bad Name", "-m", "hi"]);
    assert!(err.contains("invalid agent name"), "{err}");
    let err = sb.fails(&[
        "turn",
        "--agent",
        "support",
        "-m",
        "hi",
        "--max-cost",
        "forever",
    ]);
    assert!(err.contains("forever"), "{err}");
    let err = sb.fails(&[
        "turn",
        "--agent",
        "support",
        "-m",
        "hi",
        "--session",
        "a/b",
        "--workspace",
        ws_s,
    ]);
    assert!(err.contains("invalid session id"), "{err}");
    // A session id is per agent: "mine" for ops is not support's "mine", and using it says
    // nothing about support's.
    sb.ok(&["agent", "create", "ops", "--skills", "all"]);
    let out = sb.ok(&[
        "turn",
        "--agent",
        "ops",
        "-m",
        "hi",
        "--session",
        "mine",
        "--workspace",
        ws_s,
    ]);
    assert!(out.stdout.contains("agent ops · session mine"), "{out:?}");
}

/// `skillbase eval TASKS --relevance R [--id-map M]`: SkillRouter's graded form, end to end.
#[test]
fn eval_reads_graded_tasks() {
    let sb = Sb::new();
    sb.setup();
    let tasks = sb.path("tasks.jsonl");
    std::fs::write(
        &tasks,
        concat!(
            "{\"task_id\": \"t-refund\", \"instruction_text\": \"I want my money back\", \"domain\": \"x\"}\n",
            "{\"task_id\": \"t-notes\", \"instruction_text\": \"take notes about notes\"}\n",
            "\n",
            "{\"task_id\": \"t-ghost\", \"instruction_text\": \"anything at all\"}\n",
            "{\"task_id\": \"g\", \"instruction_text\": \"generic\"}\n",
        ),
    )
    .unwrap();
    let rel = sb.path("relevance.json");
    std::fs::write(
        &rel,
        r#"{
            "t-refund": {"gt_skill_ids": ["gt/refund", "gt/refund-policy"], "core_gt_ids": ["gt/refund"],
                         "relevance": {"gt/refund": 3, "gt/refund-policy": 3}, "task_type": "clean"},
            "t-notes": {"gt_skill_ids": ["gt/notes"], "relevance": {"gt/notes": 3, "gt/slow-report": 1}},
            "t-ghost": {"gt_skill_ids": ["gt/ghost"], "relevance": {"gt/ghost": 3}},
            "g": {"gt_skill_ids": ["gt/notes"], "relevance": {"gt/notes": 3}, "task_type": "generic_only"}
        }"#,
    )
    .unwrap();
    let (tasks_s, rel_s) = (tasks.to_str().unwrap(), rel.to_str().unwrap());
    let base = ["eval", tasks_s, "--agent", "support", "--relevance", rel_s];
    let v = sb.json(&[&base[..], &["--json"]].concat());
    assert_eq!(v["overall"]["tasks"], 2, "{v}");
    assert_eq!(v["tasks"], 4);
    assert_eq!(v["overall"]["hit_at_1"], 1.0);
    assert_eq!(v["overall"]["recall_at_5"], 1.0);
    assert_eq!(v["overall"]["visible"], 1.0);
    assert_eq!(
        v["skipped_by_reason"],
        serde_json::json!({"generic_only": 1, "no_relevant_skill": 1})
    );
    // The trigger and its companion come first.
    assert_eq!(
        strs(&v["outcomes"][0]["top"])[..2],
        ["refund".to_owned(), "refund-policy".to_owned()]
    );
    let text = sb.ok(&base).stdout;
    for want in [
        "2 tasks counted, 2 skipped",
        "hit@1",
        "r@20",
        "nDCG@10",
        "visible",
        "generic_only ×1: g",
        "no_relevant_skill ×1: t-ghost",
    ] {
        assert!(text.contains(want), "{want:?} in\n{text}");
    }
    // An id map renames ids (ids it omits are outside the pool): refund's task now expects
    // `notes`, which the message does not rank, and the notes task has no relevant skill.
    let map = sb.path("map.json");
    std::fs::write(&map, r#"{"gt_map": {"gt/refund": "notes"}}"#).unwrap();
    let map_s = map.to_str().unwrap();
    let v = sb.json(&[&base[..], &["--id-map", map_s, "--json"]].concat());
    assert_eq!(v["overall"]["tasks"], 1, "{v}");
    assert_eq!(v["overall"]["hit_at_1"], 0.0);
    assert_eq!(v["overall"]["recall_at_20"], 0.0);
    let r = sb.run(&[&base[..], &["--id-map", map_s, "--min-recall-at-5", "0.5"]].concat());
    assert_eq!(r.code, 1, "{r:?}");
    // Bad input: refused with the files and what to fix, nothing printed on stdout.
    std::fs::write(
        &map,
        r#"{"t-refund": {"gt_skill_ids": ["gt/refund"], "relevance": {"gt/refund": -3}}}"#,
    )
    .unwrap();
    let err = sb.fails(&["eval", tasks_s, "--agent", "support", "--relevance", map_s]);
    assert!(
        err.contains("map.json") && err.contains("task \"t-refund\"") && err.contains("0 or more"),
        "{err}"
    );
    let err = sb.fails(&["eval", tasks_s, "--agent", "support", "--id-map", map_s]);
    assert!(err.contains("--relevance"), "{err}");
    let err = sb.fails(&["eval", rel_s, "--agent", "support", "--relevance", rel_s]);
    assert!(err.contains("tasks line 1"), "{err}");
    let err = sb.fails(&[&base[..], &["--id-map", "/nonexistent/map.json"]].concat());
    assert!(err.contains("/nonexistent/map.json"), "{err}");
}

#[test]
fn omissions_takes_summary_or_full_only() {
    let sb = Sb::new();
    sb.setup();
    let e = sb.fails(&[
        "turn",
        "--agent",
        "support",
        "-m",
        "hi",
        "--omissions",
        "all",
    ]);
    assert!(e.contains("omissions must be `summary` or `full`"), "{e}");
}

/// `skillbase gc`: the `[retention]` policy applied once; bad input is refused before the store
/// is touched.
#[test]
fn gc_applies_the_retention_policy_and_refuses_bad_input() {
    let sb = Sb::new();
    let ws = sb.setup();
    let ws_s = ws.to_str().unwrap();
    sb.ok(&[
        "turn",
        "--agent",
        "support",
        "-m",
        "refund",
        "--session",
        "g1",
        "--workspace",
        ws_s,
    ]);
    let count = || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let store = skillbase_store::Store::open(&skillbase_store::DbUrl::Sqlite(sb.db()))
                .await
                .unwrap();
            let evs = store.events(&Default::default()).await.unwrap();
            store.close().await;
            evs.iter()
                .map(|e| e.kind.as_str().to_owned())
                .collect::<Vec<_>>()
        })
    };
    let before = count();
    assert!(before.iter().any(|k| k == "turn"));
    let conf = sb.path("skillbase.toml");
    let conf_s = conf.to_str().unwrap();
    // No policy, a missing file, bad values: clear errors and nothing changed.
    let e = sb.fails(&["gc"]);
    assert!(
        e.contains("no retention policy") && e.contains("--config"),
        "{e}"
    );
    let e = sb.fails(&["--config", "/nonexistent/skillbase.toml", "gc"]);
    assert!(e.contains("does not exist"), "{e}");
    for (text, want) in [
        ("", "no [retention] table"),
        ("[retention]\ninterval = \"1h\"\n", "sets no limit"),
        (
            "[retention]\nevents_max_age = \"a week\"\n",
            "[retention] events_max_age: 'a week' is not a duration",
        ),
        (
            "[retention]\nevents_max_size = \"10 parsecs\"\n",
            "[retention] events_max_size",
        ),
        (
            "[retention]\nevents_max_age = \"1s\"\n",
            "shorter than the minimum",
        ),
        (
            "[retention]\nkeep = \"1d\"\n",
            "[retention] keep: unknown key",
        ),
    ] {
        std::fs::write(&conf, text).unwrap();
        let e = sb.fails(&["--config", conf_s, "gc"]);
        assert!(e.contains(want), "{text}: {e}");
    }
    assert_eq!(count(), before);
    // A policy that keeps recent events removes nothing.
    std::fs::write(&conf, "[retention]\nevents_max_age = \"30d\"\n").unwrap();
    let r = sb.ok(&["--config", conf_s, "gc"]);
    assert!(r.stdout.contains("nothing to remove"), "{r:?}");
    assert_eq!(count(), before);
    // A size limit of one byte removes every call, turn and activation, and says so.
    std::fs::write(&conf, "[retention]\nevents_max_size = 1\n").unwrap();
    let v = sb.json(&["--config", conf_s, "gc", "--json"]);
    assert!(v["events"]["turn"].as_u64().unwrap() >= 1, "{v}");
    let after = count();
    assert!(
        !after.iter().any(|k| k == "turn" || k == "skill_activated"),
        "{after:?}"
    );
    assert!(after.iter().any(|k| k == "revision_written"));
    assert_eq!(after.iter().filter(|k| *k == "events_trimmed").count(), 1);
}

/// `skillbase eval --sweep DIR`: the cases again with distractors added at each size, in a
/// scratch store; the store itself is only read.
#[test]
fn eval_sweep_grows_the_library_in_a_scratch_store() {
    let sb = Sb::new();
    sb.setup();
    let cases = sb.path("cases.jsonl");
    std::fs::write(
        &cases,
        concat!(
            "{\"message\": \"refund things please\", \"expected\": \"refund\"}\n",
            "{\"message\": \"notes things of this kind\", \"expected\": \"notes\"}\n",
        ),
    )
    .unwrap();
    let pool = sb.path("pool");
    for i in 0..12 {
        write_skill(&pool, &format!("notes-kind-{i}"), "", "Notes.", &[]);
    }
    // Named like one of the agent's skills: left out, never replacing it.
    write_skill(&pool, "notes", "", "An impostor.", &[]);
    let (cases_s, pool_s) = (cases.to_str().unwrap(), pool.to_str().unwrap());
    let before = sb.json(&["list", "--json"]);
    let v = sb.json(&[
        "eval", cases_s, "--agent", "support", "--sweep", pool_s, "--sizes", "0,5,100", "--json",
    ]);
    let points = v.as_array().unwrap();
    assert_eq!(points.len(), 3, "{v}");
    // 0, 5, and 100 capped at the 12 usable distractors; the agent sees all 5 of its skills.
    let sizes: Vec<u64> = points
        .iter()
        .map(|p| p["distractors"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes, [0, 5, 12]);
    assert_eq!(points[0]["skills"], 5);
    assert_eq!(points[2]["skills"], 17);
    assert_eq!(points[0]["overall"]["recall_at_1"], 1.0, "{v}");
    // Twelve skills about notes crowd out the one labelled.
    let last = points[2]["overall"]["recall_at_1"].as_f64().unwrap();
    assert!(last < 1.0, "{v}");
    assert_eq!(sb.json(&["list", "--json"]), before);
    // Each size with the confidence's calibration.
    let c = &points[2]["calibration"];
    assert!(c["ece"].is_number() && c["auroc"].is_number(), "{v}");
    assert_eq!(c["cases"], 2);
    let text = sb
        .ok(&["eval", cases_s, "--agent", "support", "--sweep", pool_s])
        .stdout;
    assert!(
        text.contains("distractors") && text.contains("r@5"),
        "{text}"
    );
    assert!(text.contains("ECE") && text.contains("AUROC"), "{text}");
    // The constants fitted on every size's cases, pooled (2 cases at 3 sizes).
    let text = sb
        .ok(&[
            "eval",
            cases_s,
            "--agent",
            "support",
            "--sweep",
            pool_s,
            "--sizes",
            "0,5,100",
            "--fit-confidence",
        ])
        .stdout;
    assert!(
        text.contains("confidence fit (lexical ranking, 6 cases): temperature "),
        "{text}"
    );
    // One report: a confidence per case, the calibration, the `confidence:` line.
    let v = sb.json(&["eval", cases_s, "--agent", "support", "--json"]);
    let first = v["outcomes"][0]["confidence"].as_f64().unwrap();
    assert!(first > 0.0 && first <= 1.0, "{v}");
    assert_eq!(v["calibration"]["cases"], 2, "{v}");
    assert_eq!(v["calibration"]["threshold"], 0.5, "{v}");
    let text = sb.ok(&["eval", cases_s, "--agent", "support"]).stdout;
    assert!(text.contains("  confidence: ECE "), "{text}");
    assert!(text.contains("0/0 no-skill messages declined"), "{text}");
    // The calibration gate: a bound the report meets passes, one it cannot meet fails (ECE is
    // never below 0), and a bound on graded tasks or outside 0..1 makes no sense.
    let ece = v["calibration"]["ece"].as_f64().unwrap();
    let bound = format!("{:.6}", ece + 1e-3);
    sb.ok(&["eval", cases_s, "--agent", "support", "--max-ece", &bound]);
    assert!(ece > 0.0, "{v}");
    let r = sb.run(&["eval", cases_s, "--agent", "support", "--max-ece", "0"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr.contains("ECE") && r.stderr.contains("above the allowed 0.000"),
        "{r:?}"
    );
    let err = sb.fails(&["eval", cases_s, "--agent", "support", "--max-ece", "1.5"]);
    assert!(err.contains("between 0 and 1"), "{err}");
    let err = sb.fails(&[
        "eval",
        cases_s,
        "--agent",
        "support",
        "--explain",
        "refund",
        "--fit-confidence",
    ]);
    assert!(err.contains("--fit-confidence"), "{err}");
    // Bad input: flags that make no sense together, a missing folder.
    let err = sb.fails(&["eval", cases_s, "--agent", "support", "--sizes", "5"]);
    assert!(err.contains("--sweep"), "{err}");
    let err = sb.fails(&[
        "eval",
        cases_s,
        "--agent",
        "support",
        "--sweep",
        "/nonexistent/pool",
    ]);
    assert!(err.contains("/nonexistent/pool"), "{err}");
}

/// `skillbase eval --explain SKILL`: why the skill was missed, for people and as JSON.
#[test]
fn eval_explain_names_the_winner_and_the_words() {
    let sb = Sb::new();
    sb.setup();
    let cases = sb.path("cases.jsonl");
    std::fs::write(
        &cases,
        concat!(
            "{\"message\": \"take notes about the report\", \"expected\": \"slow-report\"}\n",
            "{\"message\": \"slow-report things\", \"expected\": \"slow-report\"}\n",
        ),
    )
    .unwrap();
    let cases_s = cases.to_str().unwrap();
    let v = sb.json(&[
        "eval",
        cases_s,
        "--agent",
        "support",
        "--explain",
        "slow-report",
        "--json",
    ]);
    assert_eq!(v["expected"], 2, "{v}");
    assert_eq!(v["first"], 1, "{v}");
    assert_eq!(v["misses"][0]["winner"], "notes", "{v}");
    assert!(
        v["misses"][0]["decided_by"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["word"] == "notes"),
        "{v}"
    );
    let text = sb
        .ok(&[
            "eval",
            cases_s,
            "--agent",
            "support",
            "--explain",
            "slow-report",
        ])
        .stdout;
    assert!(
        text.contains("first in 1 of 2") && text.contains("notes won"),
        "{text}"
    );
    let err = sb.fails(&["eval", cases_s, "--agent", "support", "--explain", "ghost"]);
    assert!(
        err.contains("ghost") && err.contains("skillbase list --agent support"),
        "{err}"
    );
}

#[test]
fn usage_reports_a_replayed_turn_and_refuses_bad_input() {
    let sb = Sb::new();
    let ws = sb.setup();
    let ws_s = ws.to_str().unwrap();
    sb.ok(&[
        "turn",
        "--agent",
        "support",
        "-m",
        "I want my MONEY back",
        "--session",
        "s1",
        "--workspace",
        ws_s,
        "--json",
    ]);
    let u = sb.json(&["usage", "refund", "--json"]);
    assert_eq!(u["skill"], "refund");
    assert_eq!(u["activations"]["trigger"], 1);
    assert_eq!(u["activations"]["eager"], 0);
    assert!(u["body_tokens"].as_i64().unwrap() > 0, "{u}");
    assert_eq!(u["agents"][0]["agent"], "support");
    assert_eq!(u["agents"][0]["turns"], 1);
    assert_eq!(u["agents"][0]["listed"]["left_out"], 0);
    assert_eq!(u["revisions"][0]["rev"], 1);
    let notes = sb.json(&["usage", "notes", "--agent", "support", "--json"]);
    assert_eq!(notes["listed"]["full"], 1);
    assert_eq!(notes["activations"]["eager"], 0);

    let lib = sb.json(&["usage", "--json", "--since", "7d"]);
    let used: Vec<(&str, i64)> = lib["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["skill"].as_str().unwrap(),
                s["activations"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(used, [("hello", 1), ("refund", 1), ("refund-policy", 1)]);
    let never: Vec<&str> = lib["never_used"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(never, ["notes", "slow-report"]);

    let text = sb.ok(&["usage", "refund"]).stdout;
    assert!(text.starts_with("refund since "), "{text}");
    assert!(
        text.contains(
            "activations   1 (eager 0, trigger 1, path 0, explicit 0, load 0, companion 0, other 0)"
        ),
        "{text}"
    );
    assert!(text.contains("\nsupport "), "{text}");
    let text = sb.ok(&["usage"]).stdout;
    assert!(
        text.contains("never used since ") && text.contains("  shared/notes (last used never)"),
        "{text}"
    );

    for (args, want) in [
        (
            vec!["usage", "--since", "yesterday"],
            "--since \"yesterday\" is neither a date (YYYY-MM-DD",
        ),
        (
            vec!["usage", "refund", "--since", "2026-02-30"],
            "--since \"2026-02-30\"",
        ),
        (vec!["usage", "--since", "0d"], "between 1d and 36600d"),
        (vec!["usage", "--agent", "Not A Name"], "--agent"),
    ] {
        let err = sb.fails(&args);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// A stand-in `/v1/embeddings` endpoint on a thread: each text's vector is a few of its bytes'
/// counts (deterministic, never zero); every text embedded is counted.
fn embeddings_stand_in() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/embeddings", listener.local_addr().unwrap());
    let texts = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = texts.clone();
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { return };
            let mut reader = BufReader::new(sock.try_clone().unwrap());
            let mut len = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((k, v)) = line.split_once(':')
                    && k.eq_ignore_ascii_case("content-length")
                {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; len];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let input: Vec<&str> = body["input"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            counted.fetch_add(input.len(), SeqCst);
            let data: Vec<Value> = input
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let v: Vec<f64> = [b'a', b'e', b'o', b's', b't']
                        .iter()
                        .map(|c| 1.0 + t.bytes().filter(|b| b == c).count() as f64)
                        .collect();
                    serde_json::json!({"object": "embedding", "index": i, "embedding": v})
                })
                .collect();
            let text = serde_json::json!({"object": "list", "data": data}).to_string();
            let _ = write!(
                sock,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    (url, texts)
}

/// `eval --sweep --keep FILE`: the semantic stage's vectors are kept in FILE, and a second
/// sweep of the same pool embeds only the messages.
#[test]
fn eval_sweep_keeps_its_vectors() {
    use std::sync::atomic::Ordering::SeqCst;
    let sb = Sb::new();
    sb.setup();
    let (url, texts) = embeddings_stand_in();
    let conf = sb.path("semantic.toml");
    std::fs::write(
        &conf,
        format!("[semantic]\nembedder = \"openai\"\nurl = \"{url}\"\nmodel = \"stand-in\"\n"),
    )
    .unwrap();
    let cases = sb.path("cases.jsonl");
    std::fs::write(
        &cases,
        "{\"message\": \"refund things please\", \"expected\": \"refund\"}\n",
    )
    .unwrap();
    let pool = sb.path("pool");
    for i in 0..6 {
        write_skill(&pool, &format!("notes-kind-{i}"), "", "Notes.", &[]);
    }
    let keep = sb.path("kept/vectors.db");
    let args = [
        "--config",
        conf.to_str().unwrap(),
        "eval",
        cases.to_str().unwrap(),
        "--agent",
        "support",
        "--sweep",
        pool.to_str().unwrap(),
        "--sizes",
        "0,6",
        "--keep",
        keep.to_str().unwrap(),
        "--json",
    ];
    // The file and its folder are created.
    let first = sb.run(&args);
    assert_eq!(first.code, 0, "{first:?}");
    let v: Value = serde_json::from_str(&first.stdout).unwrap();
    assert_eq!(v[1]["skills"], 11, "{v}");
    assert!(
        first.stderr.contains("sweep: 0 vectors read from"),
        "{first:?}"
    );
    let embedded_first = texts.swap(0, SeqCst);
    // 11 skills' vectors and the message's, at each of the two sizes.
    assert!(embedded_first >= 11 + 2, "{embedded_first}");
    assert!(first.stderr.contains("vectors kept in"), "{first:?}");
    let second = sb.run(&args);
    assert_eq!(second.code, 0, "{second:?}");
    let read: usize = second
        .stderr
        .lines()
        .find(|l| l.contains(" vectors read from "))
        .and_then(|l| l.strip_prefix("sweep: "))
        .and_then(|l| l.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{second:?}"));
    assert!(read >= 11, "{second:?}");
    // Only the message was embedded again, once per size: every skill's vector was kept.
    assert_eq!(texts.swap(0, SeqCst), embedded_first - read, "{second:?}");
    // The same vectors, so the same figures.
    let w: Value = serde_json::from_str(&second.stdout).unwrap();
    for i in 0..2 {
        assert_eq!(w[i]["overall"], v[i]["overall"], "{w}");
        assert_eq!(w[i]["calibration"], v[i]["calibration"], "{w}");
    }
    // The kept file is not a store: an error that names it, nothing written into it.
    let not_a_store = sb.path("kept/not-a-store.db");
    std::fs::write(&not_a_store, "not sqlite").unwrap();
    let mut bad = args;
    bad[11] = not_a_store.to_str().unwrap();
    let err = sb.fails(&bad);
    assert!(
        err.contains("--keep") && err.contains("not-a-store.db"),
        "{err}"
    );
    assert_eq!(std::fs::read(&not_a_store).unwrap(), b"not sqlite");
}
