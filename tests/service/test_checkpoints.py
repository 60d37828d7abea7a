"""Workspace checkpoints, with real git in temp folders: snapshots, diffs, restores, pruning."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from cleveragents.service.checkpoints import (
    ChangedFile,
    ChangeKind,
    Checkpoint,
    CheckpointError,
    CheckpointStore,
    CheckpointsUnavailable,
)
from cleveragents.service.checkpoints import git as checkpoint_git

pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
    pytest.mark.usefixtures("fixed_umask"),  # modes are compared exactly
]

Entry = tuple[str, bytes, int]


@pytest.fixture
def store(tmp_path: Path) -> CheckpointStore:
    return CheckpointStore(tmp_path / "data")


def folder_state(root: Path) -> dict[str, Entry]:
    """Every entry under `root` but `.git`: files with bytes and mode, links, folders."""
    state: dict[str, Entry] = {}

    def walk(folder: Path, prefix: str) -> None:
        for entry in os.scandir(folder):
            if entry.name == ".git":
                continue
            rel = prefix + entry.name
            info = entry.stat(follow_symlinks=False)
            if entry.is_symlink():
                state[rel] = ("link", os.fsencode(os.readlink(entry.path)), 0)
            elif entry.is_dir(follow_symlinks=False):
                state[rel] = ("dir", b"", info.st_mode & 0o7777)
                walk(Path(entry.path), rel + "/")
            else:
                state[rel] = ("file", Path(entry.path).read_bytes(), info.st_mode & 0o7777)

    walk(root, "")
    return state


def write(root: Path, rel: str, content: str | bytes, mode: int | None = None) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    if mode is not None:
        path.chmod(mode)
    return path


def git(cwd: Path, *args: str) -> str:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(cwd),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "Tester",
        "GIT_AUTHOR_EMAIL": "tester@example.invalid",
        "GIT_COMMITTER_NAME": "Tester",
        "GIT_COMMITTER_EMAIL": "tester@example.invalid",
        # Reading status must not refresh the index file we compare byte for byte.
        "GIT_OPTIONAL_LOCKS": "0",
    }
    done = subprocess.run(
        ["git", "-c", "protocol.file.allow=always", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def shadow_git(store: CheckpointStore, checkpoint: Checkpoint, *args: str) -> str:
    """Read the shadow repository of a checkpoint's folder (tests only read it)."""
    homes = [h for h in store.root.iterdir() if (h / "sandbox").is_file()]
    home = next(h for h in homes if (h / "sandbox").read_text() == checkpoint.sandbox_root)
    env = {"PATH": os.environ["PATH"], "GIT_DIR": str(home / "git"), "HOME": str(home)}
    return subprocess.run(
        ["git", *args], env=env, capture_output=True, text=True, check=True
    ).stdout


def object_count(store: CheckpointStore, checkpoint: Checkpoint) -> int:
    counts = dict(
        line.split(": ", 1)
        for line in shadow_git(store, checkpoint, "count-objects", "-v").splitlines()
    )
    return int(counts["count"]) + int(counts["in-pack"])


def base_project(root: Path) -> None:
    write(root, "README.md", "# project\n")
    write(root, "src/main.py", "print('hello')\n")
    write(root, "src/util.py", "def util():\n    return 1\n")
    write(root, "docs/guide.md", "guide\n")
    write(root, "docs/deep/notes.txt", "notes\r\nwith CRLF\r\n")
    write(root, "run.sh", "#!/bin/sh\necho run\n", mode=0o755)
    write(root, "data.bin", bytes(range(256)) * 4)
    write(root, "naïve name with spaces.txt", "unicode\n")
    os.symlink("README.md", root / "readme-link")


def test_restore_undoes_writes_edits_modes_deletes_creates_and_renames(
    store: CheckpointStore, sandbox: Path
) -> None:
    base_project(sandbox)
    before = folder_state(sandbox)
    first = store.snapshot(sandbox, "run-1", 1)

    write(sandbox, "README.md", "# project, edited\n")
    (sandbox / "src/main.py").chmod(0o755)
    (sandbox / "run.sh").chmod(0o644)
    shutil.rmtree(sandbox / "docs")
    write(sandbox, "new/dir/file.txt", "created\n")
    (sandbox / "src/util.py").rename(sandbox / "src/helpers.py")
    (sandbox / "readme-link").unlink()
    os.symlink("src/main.py", sandbox / "readme-link")
    write(sandbox, "data.bin", bytes(reversed(range(256))))
    (sandbox / "naïve name with spaces.txt").unlink()
    after = folder_state(sandbox)
    end = store.finish_run(sandbox, "run-1")
    assert end is not None and end.kind == "end"

    expected = {
        ChangedFile("README.md", "modified"),
        ChangedFile("src/main.py", "modified"),
        ChangedFile("run.sh", "modified"),
        ChangedFile("docs/guide.md", "deleted"),
        ChangedFile("docs/deep/notes.txt", "deleted"),
        ChangedFile("new/dir/file.txt", "added"),
        ChangedFile("src/util.py", "deleted"),
        ChangedFile("src/helpers.py", "added"),
        ChangedFile("readme-link", "modified"),
        ChangedFile("data.bin", "modified"),
        ChangedFile("naïve name with spaces.txt", "deleted"),
    }
    assert set(store.changed_files("run-1")) == expected
    assert set(store.diff(sandbox, first)) == expected

    result = store.restore(sandbox, first)
    assert folder_state(sandbox) == before
    assert result.undo is not None and result.undo.kind == "restore"
    assert result.undo.restored_to == first.id
    assert result.kept == []
    # What the restore did is the run's changes seen backwards.
    backwards: dict[ChangeKind, ChangeKind] = {
        "added": "deleted",
        "deleted": "added",
        "modified": "modified",
    }
    assert set(result.changed_files) == {
        ChangedFile(change.path, backwards[change.change]) for change in expected
    }
    # The restore is recorded under its own id and can itself be undone.
    assert store.checkpoints(result.undo.run_id) == [result.undo]
    store.restore(sandbox, result.undo)
    assert folder_state(sandbox) == after


def test_restoring_before_iteration_2_keeps_iteration_1_and_stays_undoable(
    store: CheckpointStore, sandbox: Path
) -> None:
    write(sandbox, "a.txt", "a0\n")
    store.snapshot(sandbox, "run", 1)
    write(sandbox, "a.txt", "a1\n")
    write(sandbox, "one.txt", "from iteration 1\n")
    after_one = folder_state(sandbox)
    second = store.snapshot(sandbox, "run", 2)
    write(sandbox, "a.txt", "a2\n")
    (sandbox / "one.txt").unlink()
    write(sandbox, "two.txt", "from iteration 2\n")
    after_two = folder_state(sandbox)
    store.finish_run(sandbox, "run")

    assert store.checkpoint_before("run", 2) == second
    result = store.restore(sandbox, second)
    assert folder_state(sandbox) == after_one
    assert set(result.changed_files) == {
        ChangedFile("a.txt", "modified"),
        ChangedFile("one.txt", "added"),
        ChangedFile("two.txt", "deleted"),
    }
    # The undone iteration 2 is one restore away.
    assert result.undo is not None
    store.restore(sandbox, result.undo)
    assert folder_state(sandbox) == after_two


def test_checkpoint_before_an_iteration_that_changed_nothing(
    store: CheckpointStore, sandbox: Path
) -> None:
    write(sandbox, "f.txt", "0")
    first = store.snapshot(sandbox, "run", 1)
    write(sandbox, "f.txt", "1")
    third = store.snapshot(sandbox, "run", 3)  # iteration 2 only read files
    write(sandbox, "f.txt", "3")
    end = store.finish_run(sandbox, "run")
    assert store.checkpoint_before("run") == first
    assert store.checkpoint_before("run", 1) == first
    assert store.checkpoint_before("run", 2) == third
    assert store.checkpoint_before("run", 3) == third
    assert store.checkpoint_before("run", 4) == end
    assert store.checkpoint_before("no-such-run") is None
    assert [cp.kind for cp in store.checkpoints("run")] == ["iteration", "iteration", "end"]


def test_a_run_that_took_no_checkpoint_changed_nothing(
    store: CheckpointStore, sandbox: Path
) -> None:
    write(sandbox, "f.txt", "0")
    assert store.finish_run(sandbox, "read-only-run") is None
    assert store.changed_files("read-only-run") == []
    assert store.checkpoints("read-only-run") == []


def test_changed_files_of_a_run_still_going_compare_with_the_folder_now(
    store: CheckpointStore, sandbox: Path
) -> None:
    write(sandbox, "f.txt", "0")
    store.snapshot(sandbox, "run", 1)
    write(sandbox, "g.txt", "new")
    assert store.changed_files("run") == [ChangedFile("g.txt", "added")]


def make_repository_project(tmp_path: Path, root: Path) -> None:
    """A project with its own repository, a submodule, a plain nested repository, a
    worktree, staged changes and a stash."""
    library = tmp_path / "library-source"
    library.mkdir()
    git(library, "init", "-q")
    write(library, "lib.py", "LIB = 1\n")
    git(library, "add", "lib.py")
    git(library, "commit", "-q", "-m", "library")

    git(root, "init", "-q")
    write(root, "app.py", "APP = 1\n")
    write(root, "config.toml", "x = 1\n")
    write(root, ".gitignore", "*.log\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    git(root, "submodule", "add", "-q", str(library), "vendor/lib")
    git(root, "commit", "-q", "-m", "submodule")
    git(root, "worktree", "add", "-q", "-b", "feature", ".worktrees/feature")
    write(root, "config.toml", "x = 2  # stashed\n")
    git(root, "stash", "push", "-q", "-m", "work in progress")
    write(root, "app.py", "APP = 2  # staged\n")
    git(root, "add", "app.py")
    write(root, "app.py", "APP = 3  # staged, then edited again\n")
    write(root, "untracked.txt", "not added\n")
    write(root, "vendor/lib/lib.py", "LIB = 2  # staged in the submodule\n")
    git(root / "vendor/lib", "add", "lib.py")
    nested = root / "nested"
    nested.mkdir()
    git(nested, "init", "-q")
    write(nested, "inner.txt", "inner\n")
    write(nested, ".gitignore", "*.tmp\n")
    git(nested, "add", "inner.txt")
    write(nested, "scratch.tmp", "ignored by the nested repository\n")


def repository_state(root: Path) -> dict[str, object]:
    """Every byte of every git directory of the project, then what git says about it."""
    git_files: dict[str, bytes] = {}
    for git_dir in (root / ".git", root / "nested/.git"):
        for folder, _dirs, files in os.walk(git_dir):
            for name in files:
                path = Path(folder, name)
                git_files[str(path.relative_to(root))] = path.read_bytes()
    for gitfile in (root / "vendor/lib/.git", root / ".worktrees/feature/.git"):
        git_files[str(gitfile.relative_to(root))] = gitfile.read_bytes()
    return {
        "files": git_files,
        "status": git(root, "status", "--porcelain=v2", "--branch"),
        "stash": git(root, "stash", "list"),
        "head": git(root, "rev-parse", "HEAD"),
        "submodule status": git(root / "vendor/lib", "status", "--porcelain=v2", "--branch"),
        "worktrees": git(root, "worktree", "list", "--porcelain"),
        "worktree status": git(root / ".worktrees/feature", "status", "--porcelain=v2"),
        "nested status": git(root / "nested", "status", "--porcelain=v2", "--branch"),
    }


def test_a_project_repository_with_staged_changes_and_a_stash_is_left_as_it_was(
    store: CheckpointStore, sandbox: Path, tmp_path: Path
) -> None:
    make_repository_project(tmp_path, sandbox)
    repository_before = repository_state(sandbox)
    before = folder_state(sandbox)
    first = store.snapshot(sandbox, "run", 1)
    tree = shadow_git(store, first, "ls-tree", "-r", "--name-only", first.tree).splitlines()
    # Files of the submodule, the worktree and the nested repository are in the snapshot;
    # no .git file or folder is, nor what the nested repository ignores.
    assert "vendor/lib/lib.py" in tree and ".worktrees/feature/app.py" in tree
    assert "nested/inner.txt" in tree and "nested/scratch.tmp" not in tree
    assert not [path for path in tree if ".git/" in path or path.endswith(".git")]

    write(sandbox, "app.py", "APP = 99  # the agent\n")
    write(sandbox, "vendor/lib/lib.py", "LIB = 99  # the agent\n")
    write(sandbox, ".worktrees/feature/app.py", "FEATURE = 99\n")
    write(sandbox, "nested/inner.txt", "changed\n")
    write(sandbox, "nested/made.txt", "made\n")
    (sandbox / "untracked.txt").unlink()
    store.finish_run(sandbox, "run")
    # Status differs now (the agent edited files), but no git directory changed.
    during = repository_state(sandbox)
    for unchanged in ("files", "stash", "head", "worktrees"):
        assert during[unchanged] == repository_before[unchanged]

    store.restore(sandbox, first)
    assert folder_state(sandbox) == before
    assert repository_state(sandbox) == repository_before


def test_a_workspace_without_git_works(store: CheckpointStore, sandbox: Path) -> None:
    write(sandbox, "notes.txt", "v1\n")
    first = store.snapshot(sandbox, "run", 1)
    write(sandbox, "notes.txt", "v2\n")
    write(sandbox, "more/notes.txt", "more\n")
    store.restore(sandbox, first)
    assert folder_state(sandbox) == {"notes.txt": ("file", b"v1\n", 0o644)}
    assert not (sandbox / ".git").exists()


def test_ignored_files_are_kept_beside_gits_view_and_heavy_folders_left_alone(
    store: CheckpointStore, sandbox: Path
) -> None:
    git(sandbox, "init", "-q")
    (sandbox / ".git/info").mkdir(exist_ok=True)
    (sandbox / ".git/info/exclude").write_text("secret.env\n")
    write(sandbox, ".gitignore", "*.log\nbuild/\nnode_modules/\n")
    write(sandbox, "pkg/.gitignore", "*.tmp\n")
    write(sandbox, "app.py", "v1\n")
    write(sandbox, "debug.log", "log v1\n")
    write(sandbox, "build/out.o", "object v1\n")
    write(sandbox, "node_modules/dep/index.js", "dependency v1\n")
    write(sandbox, "pkg/cache.tmp", "tmp v1\n")
    write(sandbox, "secret.env", "KEY=1\n", mode=0o600)
    before = folder_state(sandbox)
    first = store.snapshot(sandbox, "run", 1)
    # git's view of the folder is what it was; the ignored files are kept beside it.
    tree = shadow_git(store, first, "ls-tree", "-r", "--name-only", first.tree).splitlines()
    assert sorted(tree) == [".gitignore", "app.py", "pkg/.gitignore"]
    assert first.coverage.extras is not None
    extras = shadow_git(
        store, first, "ls-tree", "-r", "--name-only", f"{first.coverage.extras}^{{tree}}"
    ).splitlines()
    assert sorted(extras) == ["debug.log", "pkg/cache.tmp", "secret.env"]
    assert [(s.path, s.reason) for s in first.skipped] == [
        ("build", "heavy_folder"),
        ("node_modules", "heavy_folder"),
    ]
    assert first.note is not None and "build, node_modules" in first.note

    write(sandbox, "app.py", "v2\n")
    write(sandbox, "debug.log", "log v2\n")
    write(sandbox, "build/out.o", "object v2\n")
    write(sandbox, "build/new.o", "new object\n")
    write(sandbox, "node_modules/dep/index.js", "dependency v2\n")
    (sandbox / "pkg/cache.tmp").unlink()
    write(sandbox, "pkg/other.tmp", "tmp v2\n")
    write(sandbox, "secret.env", "KEY=2\n")
    heavy_after = {
        path: entry
        for path, entry in folder_state(sandbox).items()
        if path.startswith(("build", "node_modules"))
    }
    assert set(store.diff(sandbox, first)) == {
        ChangedFile("app.py", "modified"),
        ChangedFile("debug.log", "modified", ignored=True),
        ChangedFile("pkg/cache.tmp", "deleted", ignored=True),
        ChangedFile("pkg/other.tmp", "added", ignored=True),
        ChangedFile("secret.env", "modified", ignored=True),
    }
    result = store.restore(sandbox, first)
    assert len(result.changed_files) == 5
    now = folder_state(sandbox)
    # Every kept file is back, byte and mode; the heavy folders are as the run left them.
    assert {p: e for p, e in now.items() if not p.startswith(("build", "node_modules"))} == {
        p: e for p, e in before.items() if not p.startswith(("build", "node_modules"))
    }
    assert {p: e for p, e in now.items() if p.startswith(("build", "node_modules"))} == (
        heavy_after
    )


def test_ignored_files_beyond_the_bounds_are_never_deleted_by_a_restore(
    tmp_path: Path, sandbox: Path
) -> None:
    store = CheckpointStore(tmp_path / "data", max_ignored_files=2)
    write(sandbox, ".gitignore", "*.log\n")
    for name in ("a.log", "b.log", "c.log"):
        write(sandbox, name, name)
    write(sandbox, "big.log", "x" * 100)
    first = store.snapshot(sandbox, "run", 1)
    assert not first.coverage.ignored_held
    assert first.note is not None and "2 ignored file(s)" in first.note
    write(sandbox, "a.log", "changed")
    write(sandbox, "new.log", "made since")
    store.restore(sandbox, first)
    # The smallest were kept and are put back; what it did not keep is never deleted.
    assert (sandbox / "a.log").read_text() == "a.log"
    assert (sandbox / "big.log").read_text() == "x" * 100
    assert (sandbox / "new.log").read_text() == "made since"


def test_a_huge_file_is_skipped_with_a_note_and_left_alone(tmp_path: Path, sandbox: Path) -> None:
    store = CheckpointStore(tmp_path / "data", max_file_bytes=1000)
    write(sandbox, "small.txt", "small\n")
    write(sandbox, "huge.bin", b"x" * 2000)
    write(sandbox, "grows.txt", "small for now\n")
    first = store.snapshot(sandbox, "run", 1)
    assert [(s.path, s.size, s.reason) for s in first.skipped] == [("huge.bin", 2000, "too_large")]
    assert first.note is not None and "huge.bin" in first.note and "too large" in first.note
    assert store.checkpoint(first.id).skipped == first.skipped  # stored in the catalog

    write(sandbox, "huge.bin", b"y" * 3000)
    write(sandbox, "grows.txt", b"z" * 5000)
    write(sandbox, "small.txt", "edited\n")
    result = store.restore(sandbox, first)
    assert (sandbox / "small.txt").read_text() == "small\n"
    # Neither the skipped file nor the file now too large to save is overwritten.
    assert (sandbox / "huge.bin").read_bytes() == b"y" * 3000
    assert (sandbox / "grows.txt").read_bytes() == b"z" * 5000
    assert [(k.path, k.reason) for k in result.kept] == [("grows.txt", "in_the_way")]
    assert ChangedFile("grows.txt", "added") not in result.changed_files


def test_project_attributes_do_not_change_bytes(store: CheckpointStore, sandbox: Path) -> None:
    write(sandbox, ".gitattributes", "* text eol=crlf\n*.bin filter=lfs diff=lfs merge=lfs\n")
    write(sandbox, "mixed.txt", b"lf\ncrlf\r\nlone cr\r")
    write(sandbox, "blob.bin", b"\x00\x01 not lfs\n")
    before = folder_state(sandbox)
    first = store.snapshot(sandbox, "run", 1)
    write(sandbox, "mixed.txt", "changed\n")
    (sandbox / "blob.bin").unlink()
    store.restore(sandbox, first)
    assert folder_state(sandbox) == before


def test_a_no_change_snapshot_writes_no_object(store: CheckpointStore, sandbox: Path) -> None:
    base_project(sandbox)
    first = store.snapshot(sandbox, "run", 1)
    objects = object_count(store, first)
    second = store.snapshot(sandbox, "run", 2)
    assert (second.tree, second.commit) == (first.tree, first.commit)
    assert object_count(store, first) == objects
    assert second.id != first.id


def test_an_incremental_snapshot_writes_only_what_changed(
    store: CheckpointStore, sandbox: Path
) -> None:
    for i in range(50):
        write(sandbox, f"pkg/mod{i}.py", f"N = {i}\n")
    first = store.snapshot(sandbox, "run", 1)
    objects = object_count(store, first)
    write(sandbox, "pkg/mod7.py", "N = 'seven'\n")
    second = store.snapshot(sandbox, "run", 2)
    # One blob, the trees of pkg/ and of the root, one commit.
    assert object_count(store, first) == objects + 4
    assert store.diff(sandbox, first, second) == [ChangedFile("pkg/mod7.py", "modified")]


def test_a_restore_never_writes_through_a_symlink_it_does_not_own(
    store: CheckpointStore, sandbox: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    write(sandbox, ".gitignore", "/out\n!/out/\n")
    write(sandbox, "keep/x.txt", "x\n")
    first = store.snapshot(sandbox, "run", 1)
    shutil.rmtree(sandbox / "keep")
    os.symlink(outside, sandbox / "keep")  # a symlink the next snapshot holds
    write(sandbox, ".gitignore", "/keep\n")  # ... and now one it does not
    result = store.restore(sandbox, first)
    assert list(outside.iterdir()) == []
    # The ignored symlink is kept beside git's view, so the restore may replace it (never
    # writing through it) and its undo brings it back.
    assert result.kept == []
    assert not (sandbox / "keep").is_symlink() and (sandbox / "keep/x.txt").read_text() == "x\n"
    assert result.undo is not None
    store.restore(sandbox, result.undo)
    assert (sandbox / "keep").is_symlink() and list(outside.iterdir()) == []


def test_a_restore_never_writes_through_a_symlink_no_checkpoint_holds(
    tmp_path: Path, sandbox: Path
) -> None:
    store = CheckpointStore(tmp_path / "data", max_ignored_files=0)
    outside = tmp_path / "outside"
    outside.mkdir()
    write(sandbox, "keep/x.txt", "x\n")
    first = store.snapshot(sandbox, "run", 1)
    shutil.rmtree(sandbox / "keep")
    os.symlink(outside, sandbox / "keep")
    write(sandbox, ".gitignore", "/keep\n")  # ignored, and beyond the bounds on those
    result = store.restore(sandbox, first)
    assert list(outside.iterdir()) == []
    assert [k.path for k in result.kept] == ["keep/x.txt"]
    assert (sandbox / "keep").is_symlink()


def test_a_dry_run_changes_and_records_nothing(store: CheckpointStore, sandbox: Path) -> None:
    write(sandbox, "a.txt", "1")
    first = store.snapshot(sandbox, "run", 1)
    write(sandbox, "a.txt", "2")
    write(sandbox, "b.txt", "new")
    state = folder_state(sandbox)
    dry = store.restore(sandbox, first, restore_id="preview", dry_run=True)
    assert dry.undo is None and dry.dry_run
    assert set(dry.changed_files) == {
        ChangedFile("a.txt", "modified"),
        ChangedFile("b.txt", "deleted"),
    }
    assert folder_state(sandbox) == state
    assert store.checkpoints("preview") == []
    real = store.restore(sandbox, first, restore_id="for-real")
    assert set(real.changed_files) == set(dry.changed_files)
    assert real.undo is not None and store.checkpoints("for-real") == [real.undo]


def test_restoring_an_unchanged_folder_changes_nothing(
    store: CheckpointStore, sandbox: Path
) -> None:
    write(sandbox, "a.txt", "1")
    first = store.snapshot(sandbox, "run", 1)
    result = store.restore(sandbox, first)
    assert result.changed_files == []
    assert result.undo is not None and result.undo.tree == first.tree


def test_prune_reclaims_disk_space(store: CheckpointStore, sandbox: Path) -> None:
    write(sandbox, "keep.txt", "kept\n")
    write(sandbox, "bulk.bin", os.urandom(400_000))
    old = store.snapshot(sandbox, "old-run", 1)
    (sandbox / "bulk.bin").unlink()
    write(sandbox, "other.bin", os.urandom(200_000))
    store.finish_run(sandbox, "old-run")
    write(sandbox, "keep.txt", "kept, edited\n")
    kept = store.snapshot(sandbox, "new-run", 1)
    usage = store.disk_usage()
    assert usage.total_bytes > 600_000
    assert usage.by_sandbox[str(sandbox.resolve())] > 600_000

    result = store.prune(keep_run_ids={"new-run"})
    assert result.removed_checkpoints == 2
    assert store.checkpoints("old-run") == [] and store.checkpoints("new-run") == [kept]
    with pytest.raises(KeyError):
        store.checkpoint(old.id)
    # bulk.bin was only in the pruned checkpoints: its 400 kB are given back.
    assert result.bytes_before - result.bytes_after > 350_000
    assert store.disk_usage().total_bytes == result.bytes_after
    write(sandbox, "keep.txt", "again\n")
    store.restore(sandbox, kept)
    assert (sandbox / "keep.txt").read_text() == "kept, edited\n"

    everything = store.prune(older_than=kept.created_at + 3600)
    assert everything.removed_repositories == 1
    assert store.disk_usage().by_sandbox == {}
    assert store.checkpoints("new-run") == []
    # The folder can be checkpointed again from scratch.
    assert store.snapshot(sandbox, "later", 1).tree == store.snapshot(sandbox, "later", 2).tree


def test_prune_by_age_keeps_a_run_whole(store: CheckpointStore, sandbox: Path) -> None:
    write(sandbox, "f.txt", "0")
    first = store.snapshot(sandbox, "run", 1)
    write(sandbox, "f.txt", "1")
    store.finish_run(sandbox, "run")
    # The run's first checkpoint is older than the cut, its end is not: the run stays.
    store.prune(older_than=first.created_at + 1e-6)
    assert len(store.checkpoints("run")) == 2
    assert store.changed_files("run") == [ChangedFile("f.txt", "modified")]


def test_missing_git_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(CheckpointsUnavailable, match=r"git was not found.*cannot be undone"):
        CheckpointStore(tmp_path / "data", git="no-such-git-here")
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(CheckpointsUnavailable, match="Install git"):
        CheckpointStore(tmp_path / "data")


def test_a_sandbox_that_is_not_a_folder_is_refused(store: CheckpointStore, tmp_path: Path) -> None:
    a_file = write(tmp_path, "file.txt", "x")
    with pytest.raises(CheckpointError, match="is not a directory"):
        store.snapshot(a_file, "run", 1)
    with pytest.raises(CheckpointError, match="does not exist"):
        store.snapshot(tmp_path / "missing", "run", 1)


def test_a_checkpoint_of_another_folder_is_refused(
    store: CheckpointStore, sandbox: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    write(sandbox, "a.txt", "a")
    first = store.snapshot(sandbox, "run", 1)
    with pytest.raises(CheckpointError, match="not"):
        store.restore(other, first)


def test_a_damaged_shadow_repository_is_recreated_with_a_warning(
    store: CheckpointStore, sandbox: Path
) -> None:
    write(sandbox, "a.txt", "a")
    first = store.snapshot(sandbox, "run", 1)
    git_dir = store.root / next(p.name for p in store.root.iterdir() if (p / "git").is_dir())
    (git_dir / "git/HEAD").write_text("garbage\n")
    write(sandbox, "a.txt", "b")
    second = store.snapshot(sandbox, "run", 2)
    assert second.warnings and "damaged" in second.warnings[0]
    assert store.checkpoints("run") == [second]  # the lost one is no longer offered
    with pytest.raises(KeyError):
        store.checkpoint(first.id)

    # Objects lost: a file that did not change cannot be written into the tree, so the
    # snapshot finds the damage out and starts afresh too.
    shutil.rmtree(git_dir / "git/objects")
    (git_dir / "git/objects").mkdir()
    third = store.snapshot(sandbox, "run", 3)
    assert third.warnings and "damaged" in third.warnings[0]
    write(sandbox, "a.txt", "d")
    store.restore(sandbox, third)
    assert (sandbox / "a.txt").read_text() == "b"


def test_a_checkpoint_whose_objects_are_lost_is_refused_clearly(
    store: CheckpointStore, sandbox: Path
) -> None:
    write(sandbox, "a.txt", "a")
    first = store.snapshot(sandbox, "run", 1)
    git_dir = next(p for p in store.root.iterdir() if (p / "git").is_dir()) / "git"
    shutil.rmtree(git_dir / "objects")
    (git_dir / "objects").mkdir()
    write(sandbox, "a.txt", "b")  # changed, so the next snapshot needs no lost object
    second = store.snapshot(sandbox, "run", 2)
    with pytest.raises(CheckpointError, match="damaged or was pruned"):
        store.restore(sandbox, first)
    assert (sandbox / "a.txt").read_text() == "b"
    write(sandbox, "a.txt", "c")
    store.restore(sandbox, second)
    assert (sandbox / "a.txt").read_text() == "b"


def test_a_damaged_index_is_rebuilt_silently(store: CheckpointStore, sandbox: Path) -> None:
    write(sandbox, "a.txt", "a")
    first = store.snapshot(sandbox, "run", 1)
    index = next(p for p in store.root.iterdir() if (p / "git").is_dir()) / "git/index"
    index.write_bytes(b"not an index")
    second = store.snapshot(sandbox, "run", 2)
    assert second.warnings == () and second.tree == first.tree
    assert store.checkpoints("run") == [first, second]


def test_snapshots_from_many_threads_and_stores_do_not_interleave(
    tmp_path: Path, sandbox: Path
) -> None:
    for i in range(30):
        write(sandbox, f"f{i}.txt", str(i))
    stores = [CheckpointStore(tmp_path / "data") for _ in range(3)]
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for step in range(4):
                write(sandbox, f"w{worker}.txt", str(step))
                stores[worker % 3].snapshot(sandbox, f"run-{worker}", step)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert all(len(stores[0].checkpoints(f"run-{n}")) == 4 for n in range(6))


def test_a_folder_with_ignored_content_where_a_file_was_is_kept(
    store: CheckpointStore, sandbox: Path
) -> None:
    write(sandbox, ".gitignore", "node_modules/\n")
    write(sandbox, "x", "x was a file\n")
    write(sandbox, "y.txt", "y\n")
    first = store.snapshot(sandbox, "run", 1)
    (sandbox / "x").unlink()
    write(sandbox, "x/a.txt", "tracked\n")
    # In a folder no checkpoint copies: no snapshot holds it.
    write(sandbox, "x/node_modules/dep.js", "ignored, must survive\n")
    write(sandbox, "y.txt", "y2\n")
    result = store.restore(sandbox, first)
    assert [(k.path, k.size) for k in result.kept] == [("x", len("ignored, must survive\n"))]
    assert (sandbox / "x/node_modules/dep.js").read_text() == "ignored, must survive\n"
    assert not (sandbox / "x/a.txt").exists()
    assert (sandbox / "y.txt").read_text() == "y\n"


def test_stale_git_lock_files_do_not_block_snapshots(store: CheckpointStore, sandbox: Path) -> None:
    write(sandbox, "a.txt", "a")
    first = store.snapshot(sandbox, "run", 1)
    git_dir = next(p for p in store.root.iterdir() if (p / "git").is_dir()) / "git"
    (git_dir / "index.lock").write_bytes(b"")  # as a killed git leaves it
    write(sandbox, "a.txt", "b")
    second = store.snapshot(sandbox, "run", 2)
    assert second.tree != first.tree and second.warnings == ()
    assert not (git_dir / "index.lock").exists()


def test_a_sandbox_holding_the_data_folder_never_snapshots_it(tmp_path: Path) -> None:
    sandbox = tmp_path / "home"
    store = CheckpointStore(sandbox / ".local/share/cleveragents")
    write(sandbox, "notes.txt", "v1\n")
    write(sandbox, ".local/share/cleveragents/history.sqlite3", b"history v1")
    first = store.snapshot(sandbox, "run", 1)
    tree = shadow_git(store, first, "ls-tree", "-r", "--name-only", first.tree).split()
    assert tree == ["notes.txt"]
    write(sandbox, "notes.txt", "v2\n")
    write(sandbox, ".local/share/cleveragents/history.sqlite3", b"history v2")
    store.snapshot(sandbox, "run", 2)
    store.restore(sandbox, first)
    assert (sandbox / "notes.txt").read_text() == "v1\n"
    assert (sandbox / ".local/share/cleveragents/history.sqlite3").read_bytes() == b"history v2"


def test_a_damaged_catalog_is_set_aside_and_started_afresh(
    tmp_path: Path, sandbox: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = CheckpointStore(tmp_path / "data")
    write(sandbox, "a.txt", "a")
    store.snapshot(sandbox, "run", 1)
    catalog = store.root / "catalog.sqlite3"
    for leftover in store.root.glob("catalog.sqlite3-*"):
        leftover.unlink()
    catalog.write_bytes(b"this is not a database" * 100)
    fresh = CheckpointStore(tmp_path / "data")
    assert "damaged" in caplog.text
    assert fresh.checkpoints("run") == []
    assert list(store.root.glob("catalog.sqlite3.damaged-*"))
    assert fresh.snapshot(sandbox, "run", 2).kind == "iteration"


def test_a_checkpoint_missing_a_file_is_refused_before_anything_is_written(
    store: CheckpointStore, sandbox: Path
) -> None:
    write(sandbox, "a.txt", "original a\n")
    write(sandbox, "b.txt", "original b\n")
    first = store.snapshot(sandbox, "run", 1)
    blob = shadow_git(store, first, "rev-parse", f"{first.tree}:b.txt").strip()
    git_dir = next(p for p in store.root.iterdir() if (p / "git").is_dir()) / "git"
    (git_dir / "objects" / blob[:2] / blob[2:]).unlink()
    write(sandbox, "a.txt", "edited a\n")
    write(sandbox, "b.txt", "edited b\n")
    state = folder_state(sandbox)
    with pytest.raises(CheckpointError, match="damaged: 1 of its files are missing"):
        store.restore(sandbox, first)
    assert folder_state(sandbox) == state


def test_a_sandbox_inside_a_larger_repository_follows_its_ignore_rules(
    store: CheckpointStore, tmp_path: Path
) -> None:
    monorepo = tmp_path / "monorepo"
    monorepo.mkdir()
    git(monorepo, "init", "-q")
    write(monorepo, ".gitignore", "node_modules/\n*.log\nbuild/\n")
    write(monorepo, "other/file.txt", "not in the sandbox\n")
    sandbox = monorepo / "packages/app"
    write(sandbox, "src/index.js", "export {}\n")
    write(sandbox, "node_modules/dep/index.js", "dependency\n")
    write(sandbox, "debug.log", "log\n")
    first = store.snapshot(sandbox, "run", 1)
    tree = shadow_git(store, first, "ls-tree", "-r", "--name-only", first.tree).split()
    assert tree == ["src/index.js"]

    # A sandbox the larger repository ignores as a whole follows only its own rules.
    ignored_sandbox = monorepo / "build/scratch"
    write(ignored_sandbox, "a.txt", "a\n")
    write(ignored_sandbox, "b.log", "b\n")
    second = store.snapshot(ignored_sandbox, "run", 1)
    tree = shadow_git(store, second, "ls-tree", "-r", "--name-only", second.tree).split()
    assert tree == ["a.txt", "b.log"]


def test_too_many_files_is_a_clear_error(tmp_path: Path, sandbox: Path) -> None:
    store = CheckpointStore(tmp_path / "data", max_files=20)
    for i in range(21):
        write(sandbox, f"f{i}.txt", str(i))
    with pytest.raises(CheckpointError, match=r"more than 20 files.*no checkpoint was taken"):
        store.snapshot(sandbox, "run", 1)


def test_the_fast_scan_sees_what_a_full_listing_sees(tmp_path: Path, sandbox: Path) -> None:
    """After the first snapshot git reports what changed (diff-files, one listing of what the
    index does not hold); a fresh store lists everything. Both must record the same state."""
    store = CheckpointStore(tmp_path / "data", max_file_bytes=1000)
    base_project(sandbox)
    write(sandbox, ".gitignore", "*.log\ncache/\nnode_modules/\n")
    write(sandbox, "keep.log", "ignored\n")
    write(sandbox, "cache/a.bin", b"\x00" * 10)
    write(sandbox, "node_modules/dep/index.js", "dep\n")
    write(sandbox, "turns/into/folder.txt", "a file\n")
    write(sandbox, "becomes", "a file that becomes a folder\n")
    write(sandbox, "grows.txt", "small\n")
    (sandbox / "empty/deep").mkdir(parents=True)
    nested = sandbox / "nested"
    nested.mkdir()
    git(nested, "init", "-q")
    write(nested, "inner.txt", "inner\n")
    write(nested, ".gitignore", "*.tmp\n")
    store.snapshot(sandbox, "run", 1)
    repo = store._repo(sandbox)
    assert store._scan_state(repo) is not None  # the next snapshot takes the fast path

    write(sandbox, "README.md", "# edited\n")
    (sandbox / "src/util.py").chmod(0o600)  # bits only: content and executable bit the same
    (sandbox / "run.sh").unlink()
    write(sandbox, "brand/new/file.txt", "new\n")
    write(sandbox, "brand/new/debug.log", "ignored in a new folder\n")
    (sandbox / "brand/new/empty").mkdir()
    shutil.rmtree(sandbox / "turns")
    write(sandbox, "turns", "a folder that became a file\n")
    (sandbox / "becomes").unlink()
    write(sandbox, "becomes/inside.txt", "inside\n")
    write(sandbox, "grows.txt", "x" * 2000)  # now too large
    write(sandbox, "keep.log", "ignored, changed\n", mode=0o640)
    write(sandbox, "cache/b.bin", b"\x01" * 20)
    write(sandbox, "node_modules/dep/index.js", "dep 2\n")
    (sandbox / "empty/deep").rmdir()
    (sandbox / "made/empty").mkdir(parents=True)
    write(nested, "added.txt", "added in the nested repository\n")
    write(nested, "scratch.tmp", "ignored by the nested repository\n")
    other = sandbox / "cloned"
    other.mkdir()
    git(other, "init", "-q")
    write(other, "lib.py", "LIB = 1\n")
    os.symlink("README.md", sandbox / "new-link")

    fast = store.snapshot(sandbox, "run", 2)
    full = CheckpointStore(tmp_path / "other-data", max_file_bytes=1000).snapshot(sandbox, "run", 1)
    fast_state = store._state_of(repo, fast)
    other_store = CheckpointStore(tmp_path / "other-data", max_file_bytes=1000)
    full_state = other_store._state_of(other_store._repo(sandbox), full)
    assert fast.tree == full.tree
    assert fast_state.extras_tree == full_state.extras_tree
    assert fast_state.meta == full_state.meta
    assert sorted(fast.skipped, key=str) == sorted(full.skipped, key=str)
    assert fast.files == full.files
    assert fast_state.meta.modes["src/util.py"] == 0o600
    assert "made/empty" in fast_state.meta.empty_dirs


def test_a_huge_ignored_folder_is_not_walked_whole_and_its_files_never_deleted(
    tmp_path: Path, sandbox: Path
) -> None:
    store = CheckpointStore(tmp_path / "data", max_ignored_files=2)
    write(sandbox, ".gitignore", "data/\n")
    for i in range(40):
        write(sandbox, f"data/part{i:02d}/rows.csv", f"{i}\n")
    first = store.snapshot(sandbox, "run", 1)
    assert not first.coverage.ignored_held
    assert first.note is not None and "the ignored folder data/" in first.note
    write(sandbox, "data/new.csv", "made since\n")
    store.restore(sandbox, first)
    # Nothing it did not hold is deleted.
    assert len(list((sandbox / "data").rglob("*.csv"))) == 41


def test_a_restore_removes_no_folder_through_a_symlink(tmp_path: Path, sandbox: Path) -> None:
    store = CheckpointStore(tmp_path / "data")
    outside = tmp_path / "outside"
    (outside / "empty").mkdir(parents=True)
    write(sandbox, "a.txt", "a\n")
    first = store.snapshot(sandbox, "run", 1)
    (sandbox / "made/empty").mkdir(parents=True)  # an empty folder the run made
    result = store.restore(sandbox, first)
    assert ChangedFile("made/empty/", "deleted") in result.changed_files
    assert not (sandbox / "made").exists()
    assert result.undo is not None
    store.restore(sandbox, result.undo)  # the folders are made again
    assert (sandbox / "made/empty").is_dir()
    # The folder the undo would remove is now reached through a symlink: left alone.
    shutil.rmtree(sandbox / "made")
    os.symlink(outside, sandbox / "made")
    store.restore(sandbox, first)
    assert (outside / "empty").is_dir()


def test_a_large_first_snapshot_packs_its_files_and_restores_them_exactly(
    store: CheckpointStore, sandbox: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Small batches, so that a test-sized folder takes several packs.
    monkeypatch.setattr(checkpoint_git, "PACK_BATCH", 400)
    files = checkpoint_git.PACK_FROM_FILES + 200
    for i in range(files):
        write(sandbox, f"pkg{i // 100}/mod{i}.py", f"N = {i}\n", mode=0o755 if i % 7 else None)
    write(sandbox, "empty.txt", "")
    os.symlink("pkg0/mod1.py", sandbox / "link")
    before_state = folder_state(sandbox)
    first = store.snapshot(sandbox, "run", 1)
    if not checkpoint_git.version_at_least(store.git_version, (2, 37)):
        pytest.skip(f"{store.git_version} writes loose objects only")
    counts = dict(
        line.split(": ", 1) for line in shadow_git(store, first, "count-objects", "-v").splitlines()
    )
    # The contents went into packs, one per batch; only trees, commits, the empty file and
    # the link are loose.
    assert int(counts["packs"]) == -(-(files + 1) // 400)
    assert int(counts["in-pack"]) >= files
    assert int(counts["count"]) < 50
    shadow_git(store, first, "fsck", "--no-dangling")
    # The same tree plain git makes of the folder.
    plain = tmp_path / "plain.git"
    git(tmp_path, "init", "-q", "--bare", str(plain))
    plain_env = ["--git-dir", str(plain), "--work-tree", str(sandbox)]
    git(sandbox, *plain_env, "add", "-A")
    assert first.tree == git(sandbox, *plain_env, "write-tree").strip()
    write(sandbox, "pkg0/mod3.py", "changed\n")
    (sandbox / "pkg1" / "mod150.py").unlink()
    write(sandbox, "new.txt", "new\n")
    store.restore(sandbox, first)
    assert folder_state(sandbox) == before_state


def test_git_versions_are_read_from_gits_own_words() -> None:
    assert checkpoint_git.version_at_least("git version 2.39.5", (2, 37))
    assert checkpoint_git.version_at_least("git version 3.0.0", (2, 37))
    assert checkpoint_git.version_at_least("git version 2.45.1.windows.1", (2, 37))
    assert not checkpoint_git.version_at_least("git version 2.36.6", (2, 37))
    assert not checkpoint_git.version_at_least("git version 1.9.0", (2, 37))
    assert not checkpoint_git.version_at_least("not git at all", (2, 37))
    assert not checkpoint_git.version_at_least("", (2, 37))
