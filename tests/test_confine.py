"""The confinement primitive: only regular files inside the capture are read."""

from __future__ import annotations

import os

import pytest

from attlens.io.confine import NotRegularFile, OutsideCapture, TooLarge, read_capture_file, resolve_inside


@pytest.fixture
def cap(tmp_path):
    d = tmp_path / "cap"
    d.mkdir()
    (d / "a.json").write_bytes(b"{}")
    (tmp_path / "secret").write_text("outside")
    return d


def test_reads_a_regular_file_inside(cap):
    assert read_capture_file(cap, "a.json") == b"{}"
    os.symlink("a.json", cap / "link.json")  # a symlink that stays inside is fine
    assert read_capture_file(cap, "link.json") == b"{}"


@pytest.mark.parametrize("name", ["../secret", "/etc/passwd", "sub/../../secret", "", "a\x00b"])
def test_refuses_names_outside(cap, name):
    with pytest.raises(OutsideCapture):
        read_capture_file(cap, name)


def test_refuses_symlink_leading_outside(cap):
    os.symlink(cap.parent / "secret", cap / "s.json")
    with pytest.raises(OutsideCapture):
        read_capture_file(cap, "s.json")


def test_refuses_fifo_without_blocking(cap):
    os.mkfifo(cap / "w.json")
    with pytest.raises(NotRegularFile):
        read_capture_file(cap, "w.json")


def test_refuses_device_even_inside(cap):
    with pytest.raises(NotRegularFile):
        from attlens.io.confine import read_regular

        read_regular("/dev/zero")


def test_limit(cap):
    (cap / "big").write_bytes(b"x" * 1000)
    assert len(read_capture_file(cap, "big", limit=1000)) == 1000
    with pytest.raises(TooLarge):
        read_capture_file(cap, "big", limit=999)


def test_resolve_inside_returns_real_path(cap):
    assert resolve_inside(cap, "a.json") == (cap / "a.json").resolve()
