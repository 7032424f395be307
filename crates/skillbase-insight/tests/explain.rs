//! `eval --explain`: why a skill was missed, over an index made in memory.

use skillbase_insight::eval::{EvalCase, EvalError};
use skillbase_insight::explain::explain;
use skillbase_runtime::{AgentView, TurnOptions};
use skillbase_store::{Agent, AgentConfig, AgentName, Index, NameSet, Scope, SkillEntry};
use std::sync::Arc;

fn view() -> AgentView {
    let skills = [
        "---\nname: slide-deck\ndescription: Build a slide deck presentation from an outline.\ntriggers:\n  - new deck\n---\nBuild slides.",
        "---\nname: speaker-notes\ndescription: Write notes to read aloud while you speak.\nwhen_not_to_use:\n  - printed handout\n---\nWrite the notes.",
        "---\nname: sql-review\ndescription: Review a SQL migration for locks.\n---\nReview it.",
        "---\nname: release-notes\ndescription: Draft release notes from merged pull requests.\n---\nDraft them.",
    ];
    let entries = skills
        .iter()
        .map(|t| SkillEntry::from_skill_md(Scope::Shared, t, "human:test").unwrap())
        .collect::<Vec<_>>();
    let agent = Arc::new(Agent {
        name: AgentName::parse("eval").unwrap(),
        config: AgentConfig {
            skills: NameSet::All,
            ..AgentConfig::default()
        },
        version: 1,
    });
    AgentView::build(
        agent,
        &Index::from_entries(entries, 1),
        &skillbase_runtime::Environment::builtins(),
    )
}

fn case(message: &str, expected: Option<&str>) -> EvalCase {
    EvalCase {
        message: message.into(),
        expected: expected.map(Into::into),
        kind: None,
        lang: None,
    }
}

#[test]
fn a_miss_names_the_winner_the_deciding_words_and_what_the_skill_lacks() {
    let cases = vec![
        // Hit: its own words.
        case("write notes to read aloud", Some("speaker-notes")),
        // Miss: "slide deck presentation" are the sibling's words, and the message has none
        // of speaker-notes' but "notes".
        case(
            "notes for my slide deck presentation",
            Some("speaker-notes"),
        ),
        // Miss: the sibling's trigger fires.
        case("a new deck and notes for it", Some("speaker-notes")),
        // Miss: its own when_not_to_use phrase.
        case("notes for a printed handout", Some("speaker-notes")),
        // Another skill expected, but this one came first.
        case("read aloud while presenting", Some("slide-deck")),
    ];
    let e = explain(
        &view(),
        &cases,
        &TurnOptions::default(),
        None,
        "speaker-notes",
    )
    .unwrap();
    assert_eq!((e.expected, e.first), (4, 1));
    assert_eq!(e.misses.len(), 3);

    let m = &e.misses[0];
    assert_eq!(m.case, 2);
    assert_eq!(m.winner, "slide-deck");
    assert!(m.rank.is_some_and(|r| r > 1), "{:?}", m.rank);
    assert!(m.winner_trigger.is_none());
    assert!(m.lexical.1 > m.lexical.0, "{:?}", m.lexical);
    let decided: Vec<&str> = m.decided_by.iter().map(|t| t.word.as_str()).collect();
    assert!(
        decided.contains(&"slide") && decided.contains(&"deck"),
        "{decided:?}"
    );
    assert!(
        m.lacks.contains(&"presentation".to_owned()),
        "{:?}",
        m.lacks
    );
    assert!(m.skill_words.iter().any(|t| t.word == "notes"));
    // The two lists sum to the lexical scores the ranking used.
    let sum: f32 = m.winner_words.iter().map(|t| t.score).sum();
    assert!((sum - m.lexical.1).abs() < 1e-4);

    assert_eq!(e.misses[1].winner, "slide-deck");
    assert_eq!(e.misses[1].winner_trigger.as_deref(), Some("new deck"));

    assert_eq!(
        e.misses[2].suppressed_by.as_deref(),
        Some("printed handout")
    );

    assert_eq!(e.taken, vec![(5, Some("slide-deck".to_owned()))]);
}

#[test]
fn a_skill_the_agent_does_not_see_is_refused_with_what_to_do() {
    let err = explain(
        &view(),
        &[case("anything", None)],
        &TurnOptions::default(),
        None,
        "ghost-skill",
    )
    .unwrap_err();
    let EvalError::Explain(msg) = err else {
        panic!("{err:?}")
    };
    assert!(
        msg.contains("ghost-skill") && msg.contains("skillbase list --agent eval"),
        "{msg}"
    );
}

#[test]
fn a_skill_no_case_expects_is_explained_as_such() {
    let e = explain(
        &view(),
        &[case("review the sql migration", Some("sql-review"))],
        &TurnOptions::default(),
        None,
        "release-notes",
    )
    .unwrap();
    assert_eq!((e.expected, e.first), (0, 0));
    assert!(e.misses.is_empty() && e.taken.is_empty());
}

/// With the reranker's logits among the semantic inputs, a miss says what it read: the winner's
/// logit, and the skill's or that it was not among the candidates read.
#[test]
fn a_miss_says_what_the_reranker_read() {
    let v = view();
    let at = |name: &str| v.by_name[name] as u32;
    // One dimension: every skill equally similar (the first stages decide by their words).
    let vectors = skillbase_runtime::QueryVectors {
        matrix: Arc::new(skillbase_route::fusion::SemanticMatrix::new(
            1,
            vec![1.0; v.skills.len()],
            vec![true; v.skills.len()],
        )),
        queries: vec![vec![1.0], vec![1.0]],
        weight: 0.5,
        reranks: vec![
            vec![(at("slide-deck"), 3.0), (at("sql-review"), -6.0)],
            Vec::new(),
        ],
    };
    let cases = vec![
        case(
            "notes for my slide deck presentation",
            Some("speaker-notes"),
        ),
        case(
            "notes for my slide deck presentation",
            Some("speaker-notes"),
        ),
    ];
    let e = explain(
        &v,
        &cases,
        &TurnOptions::default(),
        Some(&vectors),
        "speaker-notes",
    )
    .unwrap();
    assert_eq!(e.misses.len(), 2, "{e:?}");
    let m = &e.misses[0];
    assert_eq!(m.winner, "slide-deck");
    assert_eq!(m.rerank, Some((None, Some(3.0))), "{m:?}");
    assert!(m.semantic.is_some());
    // The second message was not reranked (a long or non-English one, say).
    assert_eq!(e.misses[1].rerank, None);
}
