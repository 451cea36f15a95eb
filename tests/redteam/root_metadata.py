"""Attack (sandbox): change a file it may only read without writing it. Landlock checks writes, not metadata calls
nor ioctls on regular files, so a worker running as root with its capabilities could make the records immutable
(chattr +i through a read-only descriptor), hand them to another owner (chown) or set trusted xattrs, and every
later run would fail to store its records; ext4's shutdown ioctl, on the same kind of descriptor, would take the
whole file system down (not tried here).

The target is $REDTEAM_TARGET, a file outside the worker's writable folders. The file refuses to import if any of
the calls succeeds (undoing an immutable flag first); with every capability dropped, each is refused and the file
computes honestly."""
import array
import fcntl
import os

from _honest import honest

FS_IOC_GETFLAGS, FS_IOC_SETFLAGS, FS_IMMUTABLE_FL = 0x80086601, 0x40086602, 0x10


def immutable(path: str) -> bool:
    fd = os.open(path, os.O_RDONLY)
    try:
        flags = array.array("l", [0])
        fcntl.ioctl(fd, FS_IOC_GETFLAGS, flags, True)
        before = flags[0]
        flags[0] = before | FS_IMMUTABLE_FL
        fcntl.ioctl(fd, FS_IOC_SETFLAGS, flags, True)
        flags[0] = before
        fcntl.ioctl(fd, FS_IOC_SETFLAGS, flags, True)  # the target stays usable for the test that checks
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def succeeded(call, *args) -> bool:
    try:
        call(*args)
    except OSError:
        return False
    return True


target = os.environ["REDTEAM_TARGET"]
stat = os.stat(target)
changed = [name for name, done in (
    ("chattr +i", immutable(target)),
    ("chown", succeeded(os.chown, target, stat.st_uid + 1, stat.st_gid)),
    ("trusted xattr", succeeded(os.setxattr, target, "trusted.redteam", b"1")),
) if done]
if changed:
    raise RuntimeError(f"changed a file it may only read: {', '.join(changed)}")


def custom_kernel(data):
    return honest(data)
