"""FileSystem.writev takes any number of buffers: writev(2) refuses more than IOV_MAX (EINVAL)."""

from storage.fs import IOV_MAX, LOCAL_FS


def test_writev_of_more_buffers_than_iov_max(tmp_path):
    parts = [b"%05d" % i for i in range(3 * IOV_MAX + 7)]
    fd = LOCAL_FS.open_new(tmp_path / "f")
    try:
        LOCAL_FS.writev(fd, parts, sum(map(len, parts)))
    finally:
        LOCAL_FS.close(fd)
    assert (tmp_path / "f").read_bytes() == b"".join(parts)
