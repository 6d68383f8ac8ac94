//! `delete_session` into the freedesktop.org trash (the `trash` crate), with `XDG_DATA_HOME` pointed at a temp
//! dir. One test in its own binary: the trash location comes from the process environment.

#![cfg(all(unix, not(target_os = "macos")))]

mod common;

use common::install;
use dreb_session::{DeleteMethod, Trash, delete_session};

#[test]
fn sessions_go_to_the_xdg_home_trash_with_a_trashinfo_record() {
    let data_home = tempfile::tempdir().unwrap();
    // SAFETY: the only test of this binary, set before anything else runs.
    unsafe { std::env::set_var("XDG_DATA_HOME", data_home.path()) };
    let trash = data_home.path().join("Trash");
    let dir = tempfile::tempdir().unwrap();

    let victim = install(dir.path(), "b-tool-openai");
    let active = install(dir.path(), "a-simple");
    let name = victim.file_name().unwrap().to_string_lossy().into_owned();
    let before = std::fs::read(&victim).unwrap();
    assert_eq!(
        delete_session(victim.to_str().unwrap(), Some(&active), &Trash::from_env()).unwrap(),
        DeleteMethod::Trash
    );
    assert!(!victim.exists());
    assert!(active.exists());
    assert_eq!(
        std::fs::read(trash.join("files").join(&name)).unwrap(),
        before,
        "moved whole"
    );
    let info =
        std::fs::read_to_string(trash.join("info").join(format!("{name}.trashinfo"))).unwrap();
    let canonical = std::fs::canonicalize(dir.path()).unwrap().join(&name);
    assert!(
        info.starts_with(&format!("[Trash Info]\nPath={}\n", canonical.display())),
        "{info}"
    );
    assert!(info.contains("\nDeletionDate=20"), "{info}");

    // The same name again gets a new name in the trash; the first stays.
    let again = install(dir.path(), "b-tool-openai");
    assert_eq!(
        delete_session(again.to_str().unwrap(), None, &Trash::System).unwrap(),
        DeleteMethod::Trash
    );
    assert!(trash.join("files").join(&name).exists());
    assert!(trash.join("files").join(format!("{name}.2")).exists());
    assert!(
        trash
            .join("info")
            .join(format!("{name}.2.trashinfo"))
            .exists()
    );

    // Characters outside the URI set are percent-encoded in the record.
    let spaced = dir.path().join("my session.jsonl");
    std::fs::copy(&active, &spaced).unwrap();
    assert_eq!(
        delete_session(spaced.to_str().unwrap(), None, &Trash::System).unwrap(),
        DeleteMethod::Trash
    );
    let info =
        std::fs::read_to_string(trash.join("info").join("my session.jsonl.trashinfo")).unwrap();
    assert!(info.contains("/my%20session.jsonl\n"), "{info}");

    // The rules still come first: the active session is never trashed.
    assert_eq!(
        delete_session(active.to_str().unwrap(), Some(&active), &Trash::System)
            .unwrap_err()
            .to_string(),
        "Cannot delete the currently active session"
    );
    assert!(active.exists());
}
