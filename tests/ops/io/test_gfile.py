"""tf.gfile on the local disk: ports of TF's ``lib/io/file_io_test.py`` cases.

Expected values are TF's (its test's assertions, and its messages checked against TF).
"""

from __future__ import annotations

import os

import pytest

import minitf as tf
from minitf.framework import errors


@pytest.fixture
def base(tmp_path):
    return str(tmp_path)


def _write(path, text="testing"):
    with tf.gfile.GFile(path, "w") as f:
        f.write(text)


def test_file_doesnt_exist_read_is_not_found(base):
    path = os.path.join(base, "temp_file")
    assert not tf.gfile.Exists(path)
    with pytest.raises(errors.NotFoundError, match=f"{path}; No such file or directory"):
        tf.gfile.GFile(path, "r").read()


def test_write_then_read_text_and_bytes(base):
    path = os.path.join(base, "temp_file")
    _write(path)
    assert tf.gfile.Exists(path)
    assert tf.gfile.GFile(path, "r").read() == "testing"
    assert tf.gfile.GFile(path, "rb").read() == b"testing"


def test_file_opened_for_writing_exists_only_once_written(base):
    path = os.path.join(base, "lazy")
    tf.gfile.GFile(path, "w").close()
    assert not tf.gfile.Exists(path)


def test_append(base):
    path = os.path.join(base, "temp_file")
    with tf.gfile.GFile(path, "w") as f:
        f.write("begin\n")
    with tf.gfile.GFile(path, "a") as f:
        f.write("a1\n")
        f.write("a2\n")
    assert tf.gfile.GFile(path).read() == "begin\na1\na2\n"


def test_r_plus_reads_old_contents_and_write_truncates(base):
    path = os.path.join(base, "f")
    _write(path, "hello")
    f = tf.gfile.GFile(path, "r+")
    assert f.read() == "hello"
    f.write("Z")
    f.close()
    assert tf.gfile.GFile(path).read() == "Z"


def test_read_on_write_only_and_write_on_read_only(base):
    path = os.path.join(base, "f")
    _write(path)
    with pytest.raises(errors.PermissionDeniedError, match="File isn't open for writing"):
        tf.gfile.GFile(path, "r").write("x")
    with pytest.raises(errors.PermissionDeniedError, match="File isn't open for reading"):
        tf.gfile.GFile(path, "w").read()


def test_bad_mode_is_invalid_argument(base):
    with pytest.raises(errors.InvalidArgumentError, match="mode is not 'r' or 'w'"):
        tf.gfile.GFile(os.path.join(base, "f"), "x")


def test_read_directory_is_failed_precondition(base):
    with pytest.raises(errors.FailedPreconditionError, match="Is a directory"):
        tf.gfile.GFile(base, "r").read()


def test_size_and_empty_size(base):
    path = os.path.join(base, "f")
    _write(path, "")
    assert tf.gfile.GFile(path).size() == 0
    _write(path, "testing")
    assert tf.gfile.GFile(path).size() == 7


def test_readline_readlines_and_iteration(base):
    path = os.path.join(base, "f")
    _write(path, "testing1\ntesting2\ntesting3\n\ntesting5")
    f = tf.gfile.GFile(path)
    assert f.readline() == "testing1\n"
    assert f.readline() == "testing2\n"
    assert f.readline() == "testing3\n"
    assert f.readline() == "\n"
    assert f.readline() == "testing5"
    assert f.readline() == ""
    assert tf.gfile.GFile(path, "rb").readlines() == [
        b"testing1\n",
        b"testing2\n",
        b"testing3\n",
        b"\n",
        b"testing5",
    ]
    assert list(tf.gfile.Open(path)) == ["testing1\n", "testing2\n", "testing3\n", "\n", "testing5"]


def test_seek_tell_and_whence(base):
    path = os.path.join(base, "f")
    _write(path, "testing1\ntesting2\ntesting3\n\ntesting5")
    f = tf.gfile.FastGFile(path)
    assert f.tell() == 0
    f.seek(18)
    assert f.tell() == 18
    assert f.readline() == "testing3\n"
    f.seek(-9, 2)
    assert f.read() == "\ntesting5"
    f.seek(0)
    f.seek(9, 1)
    assert f.readline() == "testing2\n"
    f.seek(position=0)
    assert f.read(7) == "testing"
    with pytest.raises(errors.InvalidArgumentError, match="Invalid whence argument: 3"):
        f.seek(0, 3)
    with pytest.raises(TypeError, match="offset argument required"):
        f.seek()
    with pytest.raises(TypeError, match="may not be set simultaneously"):
        f.seek(1, position=1)


def test_tell_while_writing_and_flush(base):
    path = os.path.join(base, "f")
    f = tf.gfile.GFile(path, "w")
    f.write("hello")
    assert f.tell() == 5
    f.flush()
    assert tf.gfile.GFile(path).read() == "hello"
    f.close()


def test_remove_and_remove_missing(base):
    path = os.path.join(base, "f")
    _write(path)
    tf.gfile.Remove(path)
    assert not tf.gfile.Exists(path)
    with pytest.raises(errors.NotFoundError, match=f"{path}; No such file or directory"):
        tf.gfile.Remove(path)


def test_mkdir_makedirs_and_is_directory(base):
    nested = os.path.join(base, "a", "b", "c")
    with pytest.raises(errors.NotFoundError, match="No such file or directory"):
        tf.gfile.MkDir(nested)
    tf.gfile.MakeDirs(nested)
    tf.gfile.MakeDirs(nested)
    assert tf.gfile.IsDirectory(nested)
    with pytest.raises(errors.AlreadyExistsError, match="File exists"):
        tf.gfile.MkDir(nested)
    path = os.path.join(base, "file")
    _write(path)
    assert not tf.gfile.IsDirectory(path)
    assert not tf.gfile.IsDirectory(os.path.join(base, "missing"))
    with pytest.raises(errors.FailedPreconditionError, match=f"{path} is not a directory"):
        tf.gfile.MakeDirs(os.path.join(path, "q"))


def test_delete_recursively(base):
    top = os.path.join(base, "top")
    tf.gfile.MakeDirs(os.path.join(top, "sub"))
    _write(os.path.join(top, "sub", "f"))
    tf.gfile.DeleteRecursively(top)
    assert not tf.gfile.Exists(top)
    with pytest.raises(errors.NotFoundError, match=f"{top} not found"):
        tf.gfile.DeleteRecursively(top)


def test_copy_and_copy_overwrite(base):
    old, new = os.path.join(base, "old"), os.path.join(base, "new")
    _write(old, "a")
    tf.gfile.Copy(old, new)
    assert tf.gfile.GFile(new).read() == "a"
    _write(old, "b")
    with pytest.raises(errors.AlreadyExistsError, match="file already exists"):
        tf.gfile.Copy(old, new)
    tf.gfile.Copy(old, new, overwrite=True)
    assert tf.gfile.GFile(new).read() == "b"
    with pytest.raises(errors.NotFoundError, match="missing; No such file or directory"):
        tf.gfile.Copy(os.path.join(base, "missing"), os.path.join(base, "x"))


def test_rename_and_rename_overwrite(base):
    old, new = os.path.join(base, "old"), os.path.join(base, "new")
    _write(old, "a")
    tf.gfile.Rename(old, new)
    assert not tf.gfile.Exists(old) and tf.gfile.GFile(new).read() == "a"
    _write(old, "b")
    with pytest.raises(errors.AlreadyExistsError, match="file already exists"):
        tf.gfile.Rename(old, new)
    tf.gfile.Rename(old, new, overwrite=True)
    assert tf.gfile.GFile(new).read() == "b"
    with pytest.raises(errors.NotFoundError, match="old; No such file or directory"):
        tf.gfile.Rename(old, new, overwrite=True)


def test_rename_directory(base):
    tf.gfile.MakeDirs(os.path.join(base, "d"))
    tf.gfile.Rename(os.path.join(base, "d"), os.path.join(base, "e"))
    assert tf.gfile.IsDirectory(os.path.join(base, "e"))


def test_glob(base, monkeypatch):
    names = [f"file{i}.txt" for i in range(6)]
    for name in names:
        _write(os.path.join(base, name))
    assert tf.gfile.Glob(os.path.join(base, "file*.txt")) == [
        os.path.join(base, name) for name in names
    ]
    assert tf.gfile.Glob(os.path.join(base, "file?.txt"))[:2] == [
        os.path.join(base, "file0.txt"),
        os.path.join(base, "file1.txt"),
    ]
    assert tf.gfile.Glob([os.path.join(base, "file0.txt"), os.path.join(base, "file5*")]) == [
        os.path.join(base, "file0.txt"),
        os.path.join(base, "file5.txt"),
    ]
    assert tf.gfile.Glob(os.path.join(base, "nothing*")) == []
    tf.gfile.MakeDirs(os.path.join(base, "d", "s"))
    _write(os.path.join(base, "d", "s", "q.txt"))
    monkeypatch.chdir(base)
    # TF expands a relative pattern that starts with a wildcard from ".".
    assert tf.gfile.Glob("*/s/*.txt") == ["./d/s/q.txt"]
    assert tf.gfile.Glob("d/*") == ["d/s"]
    assert tf.gfile.Glob("d/*/q.txt") == ["d/s/q.txt"]
    # A wildcard does not match "/".
    assert tf.gfile.Glob(os.path.join(base, "*q.txt")) == []


def test_list_directory(base):
    for name in ["file1.txt", "file2.txt", "file3.txt"]:
        _write(os.path.join(base, name))
    tf.gfile.MakeDirs(os.path.join(base, "subdir"))
    assert sorted(tf.gfile.ListDirectory(base)) == ["file1.txt", "file2.txt", "file3.txt", "subdir"]
    missing = os.path.join(base, "missing")
    with pytest.raises(errors.NotFoundError, match=f"Could not find directory {missing}"):
        tf.gfile.ListDirectory(missing)


def _tree(base):
    _write(os.path.join(base, "file1.txt"))
    tf.gfile.MakeDirs(os.path.join(base, "subdir1_1", "subdir1_1_1"))
    tf.gfile.MakeDirs(os.path.join(base, "subdir1_2"))
    _write(os.path.join(base, "subdir1_1", "file2.txt"))


def test_walk_in_order(base):
    _tree(base)
    walked = [(top, sorted(dirs), sorted(files)) for top, dirs, files in tf.gfile.Walk(base)]
    assert walked == [
        (base, ["subdir1_1", "subdir1_2"], ["file1.txt"]),
        (os.path.join(base, "subdir1_1"), ["subdir1_1_1"], ["file2.txt"]),
        (os.path.join(base, "subdir1_1", "subdir1_1_1"), [], []),
        (os.path.join(base, "subdir1_2"), [], []),
    ]


def test_walk_post_order_and_missing(base):
    _tree(base)
    tops = [top for top, _, _ in tf.gfile.Walk(base, in_order=False)]
    assert tops == [
        os.path.join(base, "subdir1_1", "subdir1_1_1"),
        os.path.join(base, "subdir1_1"),
        os.path.join(base, "subdir1_2"),
        base,
    ]
    assert list(tf.gfile.Walk(os.path.join(base, "missing"))) == []


def test_stat(base):
    path = os.path.join(base, "f")
    _write(path)
    info = tf.gfile.Stat(path)
    assert info.length == 7
    assert not info.is_directory
    assert info.mtime_nsec == int(os.stat(path).st_mtime) * 10**9
    assert tf.gfile.Stat(base).is_directory
    with pytest.raises(errors.NotFoundError, match="No such file or directory"):
        tf.gfile.Stat(os.path.join(base, "missing"))


def test_io_gfile_names(base):
    path = os.path.join(base, "f")
    with tf.io.gfile.GFile(path, "w") as f:
        f.write("x")
    assert tf.io.gfile.exists(path)
    assert tf.io.gfile.listdir(base) == ["f"]
    tf.io.gfile.makedirs(os.path.join(base, "d", "e"))
    tf.io.gfile.rmtree(os.path.join(base, "d"))
    tf.io.gfile.remove(path)
    assert not tf.io.gfile.isdir(os.path.join(base, "d")) and not tf.io.gfile.exists(path)
