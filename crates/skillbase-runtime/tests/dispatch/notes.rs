//! Notes: append, replace, bounds.

use super::*;

// ---------------------------------------------------------------------------------------------
// Notes.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notes_append_replace_and_stay_bounded() {
    let env = Env::new().await;
    let s = "notes";
    let o = env
        .call(
            s,
            "take_note",
            json!({"text": "  the user prefers email  "}),
        )
        .await;
    assert_eq!(done(&o)["notes"], json!("- the user prefers email"));
    let o = env
        .call(s, "take_note", json!({"text": "order 42 is late"}))
        .await;
    assert_eq!(
        done(&o)["notes"],
        json!("- the user prefers email\n- order 42 is late")
    );
    assert_eq!(
        env.store.note(&bot(), s).await.unwrap(),
        "- the user prefers email\n- order 42 is late"
    );
    let o = env
        .call(s, "revise_notes", json!({"text": "- order 42 is late"}))
        .await;
    assert_eq!(done(&o)["notes"], json!("- order 42 is late"));
    assert_eq!(
        env.store.note(&bot(), s).await.unwrap(),
        "- order 42 is late"
    );
    // Other sessions have their own block.
    assert_eq!(env.store.note(&bot(), "elsewhere").await.unwrap(), "");
    // Full: take_note refuses to grow the block past the limit.
    let chunk = "n".repeat(1990);
    let mut full = false;
    for _ in 0..(MAX_NOTES_BYTES / 1990 + 2) {
        let o = env.call(s, "take_note", json!({"text": chunk})).await;
        if let CallOutcome::Failed { message, .. } = &o {
            assert!(message.contains("note block is full"), "{message}");
            full = true;
            break;
        }
    }
    assert!(full);
    assert!(env.store.note(&bot(), s).await.unwrap().len() <= MAX_NOTES_BYTES);
    // revise_notes is bounded in bytes, not characters.
    assert_eq!(
        refused(
            &env.call(
                s,
                "revise_notes",
                json!({"text": "x".repeat(MAX_NOTES_BYTES + 1)})
            )
            .await
        ),
        Rule::InvalidArguments
    );
    let o = env
        .call(
            s,
            "revise_notes",
            json!({"text": "é".repeat(MAX_NOTES_BYTES / 2 + 1)}),
        )
        .await;
    assert!(
        matches!(o, CallOutcome::Failed { .. } | CallOutcome::Refused { .. }),
        "{o:?}"
    );
    assert!(env.store.note(&bot(), s).await.unwrap().len() <= MAX_NOTES_BYTES);
    done(&env.call(s, "revise_notes", json!({"text": ""})).await);
    // A note never keeps a vault value.
    let o = env
        .call(
            s,
            "take_note",
            json!({"text": format!("the password is {SECRET}")}),
        )
        .await;
    assert_eq!(
        done(&o)["notes"],
        json!("- the password is [REDACTED:LOGIN]")
    );
    done(
        &env.call(
            s,
            "revise_notes",
            json!({"text": format!("key {}", STANDARD.encode(OTHER_SECRET))}),
        )
        .await,
    );
    assert_eq!(
        env.store.note(&bot(), s).await.unwrap(),
        "key [REDACTED:OTHER]"
    );
    // Not granted: not offered.
    let a = env
        .agent("quiet", |c| c.grants.tools.retain(|t| t != "notes"))
        .await;
    env.put(skill("seed", "", "So the agent has a view.")).await;
    let o = env
        .call_as(&a, "q", "take_note", json!({"text": "x"}), CallMode::Wait)
        .await;
    assert_eq!(refused(&o), Rule::NotOffered);
    env.assert_clean().await;
}
