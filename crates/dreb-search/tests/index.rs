//! The index without a model: building, full-text ranking, incremental updates (modify, add, delete), rebuild,
//! path restriction, and the database shared across engines.

mod common;

use common::{engine, fixture, paths, search, write};
use dreb_search::Semantic;
use dreb_search::embed::ModelSource;

fn set_mtime_later(path: &std::path::Path) {
    // Modification times can be coarse: make the change visible whatever the clock's resolution.
    let f = std::fs::File::options().write(true).open(path).unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    f.set_modified(later).unwrap();
}

#[test]
fn full_text_search_without_a_model() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    let mut e = engine(dir.path(), ModelSource::Disabled);
    let out = search(&mut e, "RateLimiter");
    assert_eq!(out.semantic, Semantic::Disabled);
    let top = &out.results[0];
    assert_eq!(top.chunk.file_path, "src/auth/rate_limit.ts");
    assert_eq!(top.chunk.name.as_deref(), Some("RateLimiter"));
    assert!(
        top.scores.bm25 > 0.9 && top.scores.symbol_match > 0.9,
        "{:?}",
        top.scores
    );
    assert_eq!(top.scores.cosine, 0.0);
    // .gitignore'd files are not indexed.
    assert!(!paths(&out).iter().any(|p| p.starts_with("secret/")));
    assert!(dir.path().join(".dreb/index/search.db").is_file());
    let (files, chunks) = e.stats().unwrap();
    assert_eq!(files, 5);
    assert!(chunks >= 6, "{chunks}");
}

#[test]
fn a_missing_model_directory_is_reported_and_search_still_works() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    let missing = dir.path().join("no-model-here");
    let mut e = engine(dir.path(), ModelSource::Dir(missing.clone()));
    let out = search(&mut e, "open_database");
    match &out.semantic {
        Semantic::Unavailable { dir, .. } => assert_eq!(dir, &missing),
        other => panic!("{other:?}"),
    }
    assert_eq!(out.results[0].chunk.name.as_deref(), Some("open_database"));
}

#[test]
fn incremental_reindex_follows_modified_added_and_deleted_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fixture(root);
    let mut e = engine(root, ModelSource::Disabled);
    let first = e.update_index(None, &|_, _, _| {}).unwrap();
    assert_eq!((first.added, first.updated, first.removed), (5, 0, 0));
    let again = e.update_index(None, &|_, _, _| {}).unwrap();
    assert_eq!(
        again,
        Default::default(),
        "nothing changed, nothing re-indexed"
    );
    // Every chunk is a candidate (git recency scores them all), but nothing matches the word yet.
    assert!(
        search(&mut e, "zebracorn")
            .results
            .iter()
            .all(|r| r.scores.bm25 == 0.0)
    );

    // Modify: the new word is found, the old one gone.
    write(
        root,
        "src/render.rs",
        "pub fn draw_zebracorn() -> u32 {\n    7\n}\n",
    );
    set_mtime_later(&root.join("src/render.rs"));
    // Add a file.
    write(
        root,
        "src/new/quokka.go",
        "package new\n\nfunc FeedQuokka() int {\n\treturn 1\n}\n",
    );
    // Delete a file.
    std::fs::remove_file(root.join("src/db/store.py")).unwrap();
    let update = e.update_index(None, &|_, _, _| {}).unwrap();
    assert_eq!((update.added, update.updated, update.removed), (1, 1, 1));

    let z = search(&mut e, "zebracorn");
    assert_eq!(paths(&z)[0], "src/render.rs");
    assert_eq!(z.results[0].chunk.name.as_deref(), Some("draw_zebracorn"));
    assert!(
        search(&mut e, "render_chart")
            .results
            .iter()
            .all(|r| r.chunk.name.as_deref() != Some("render_chart"))
    );
    assert_eq!(paths(&search(&mut e, "FeedQuokka"))[0], "src/new/quokka.go");
    assert!(
        !paths(&search(&mut e, "open_database save_user"))
            .iter()
            .any(|p| p == "src/db/store.py")
    );
    assert_eq!(e.stats().unwrap().0, 5);
}

#[test]
fn the_index_persists_and_rebuild_starts_over() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    {
        let mut e = engine(dir.path(), ModelSource::Disabled);
        search(&mut e, "Clock");
    }
    // A new engine (a new process) finds the index up to date.
    let mut e = engine(dir.path(), ModelSource::Disabled);
    assert_eq!(
        e.update_index(None, &|_, _, _| {}).unwrap(),
        Default::default()
    );
    e.reset_index();
    assert!(!dir.path().join(".dreb/index/search.db").exists());
    let rebuilt = e.update_index(None, &|_, _, _| {}).unwrap();
    assert_eq!(rebuilt.added, 5);
}

#[test]
fn restrict_to_dir_filters_results_not_the_index() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    let mut e = engine(dir.path(), ModelSource::Disabled);
    let out = e
        .search("now clock", 20, Some("./src/util"), &|_, _, _| {})
        .unwrap();
    assert!(!out.results.is_empty());
    assert!(
        paths(&out).iter().all(|p| p.starts_with("src/util/")),
        "{:?}",
        paths(&out)
    );
    let limited = e.search("class", 2, None, &|_, _, _| {}).unwrap();
    assert_eq!(limited.results.len(), 2);
    assert_eq!(e.stats().unwrap().0, 5);
}

#[test]
fn progress_reports_each_phase() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    let mut e = engine(dir.path(), ModelSource::Disabled);
    let seen = std::sync::Mutex::new(Vec::new());
    e.search("store", 5, None, &|phase, c, t| {
        seen.lock().unwrap().push(format!("{phase}: {c}/{t}"))
    })
    .unwrap();
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen[0], "scanning: 0/1");
    assert!(seen.contains(&"indexing: 5/5".to_string()));
    assert_eq!(seen.last().unwrap(), "searching: 6/6");
}

#[test]
fn an_index_directory_that_cannot_be_created_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    write(
        dir.path(),
        "blocker",
        "a file where the index directory should go",
    );
    let roots = dreb_search::scanner::ScanRoots {
        project_root: dir.path().to_path_buf(),
        home: None,
        global_memory_dir: None,
    };
    let mut e = dreb_search::SearchEngine::new(
        roots,
        dir.path().join("blocker/index"),
        ModelSource::Disabled,
    );
    let err = e
        .search("x", 5, None, &|_, _, _| {})
        .err()
        .expect("an error");
    assert!(
        matches!(err, dreb_search::SearchError::IndexDir { .. }),
        "{err}"
    );
    assert!(
        err.to_string()
            .starts_with("cannot create the search index directory"),
        "{err}"
    );
    // Once the way is clear, the same engine works.
    std::fs::remove_file(dir.path().join("blocker")).unwrap();
    assert!(!search(&mut e, "Clock").results.is_empty());
}

#[test]
fn two_engines_on_one_project_share_the_index() {
    // As a parent session and its subagent child would: separate connections, writes interleaved.
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    let root = dir.path().to_path_buf();
    let threads: Vec<_> = (0..2)
        .map(|i| {
            let root = root.clone();
            std::thread::spawn(move || {
                let mut e = engine(&root, ModelSource::Disabled);
                for j in 0..5 {
                    write(
                        &root,
                        &format!("src/gen/t{i}_{j}.rs"),
                        &format!("pub fn generated_{i}_{j}() {{}}\n"),
                    );
                    e.search(&format!("generated_{i}_{j}"), 3, None, &|_, _, _| {})
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut e = engine(&root, ModelSource::Disabled);
    e.update_index(None, &|_, _, _| {}).unwrap();
    assert_eq!(e.stats().unwrap().0, 15);
    let out = search(&mut e, "generated_1_4");
    assert_eq!(out.results[0].chunk.name.as_deref(), Some("generated_1_4"));
}
