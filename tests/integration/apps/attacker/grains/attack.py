"""Tries the attack the event names and reports each attempt as "denied: <why>" or
"allowed: <what it got>"; the test decides which outcome is a failure."""

import ctypes
import ctypes.util
import errno
import os
import socket
import stat
import subprocess
import time

import redis


def _denied(exc):
    return f"denied: {type(exc).__name__}: {exc}"


def _attempt(call):
    try:
        return "allowed: " + repr(call())[:120]
    except (OSError, redis.exceptions.RedisError, subprocess.SubprocessError) as exc:
        return _denied(exc)


def _read(path):
    with open(path, "rb") as f:
        return f.read(64)


def _write(directory):
    path = os.path.join(directory, f".sand-attack-{os.getpid()}")
    with open(path, "w") as f:
        f.write("pwned")
    os.unlink(path)
    return path


def _mount_tmpfs():
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    os.makedirs("/tmp/mnt", exist_ok=True)
    if libc.mount(b"none", b"/tmp/mnt", b"tmpfs", 0, None) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return "mounted"


def _raw_socket():
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    s.close()
    return "raw socket"


def _setuid_files():
    found = []
    for top, dirs, files in os.walk("/", onerror=lambda e: None):
        if top == "/" and "proc" in dirs:
            dirs.remove("proc")
        dirs[:] = [d for d in dirs if top != "/" or d not in ("proc", "sys", "dev")]
        for name in files:
            path = os.path.join(top, name)
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            if stat.S_ISREG(mode) and mode & (stat.S_ISUID | stat.S_ISGID):
                found.append(path)
    return sorted(found)


# setuid programs and how to make each do something only root may do
PRIVILEGED_RUNS = {
    "mount": ["-t", "tmpfs", "none", "/tmp/mnt"],
    "umount": ["/tmp"],
    "su": ["-c", "id -u"],
    "chsh": ["-s", "/bin/sh", "root"],
    "gpasswd": ["-a", "nobody", "root"],
}


def _run_setuid(path):
    os.makedirs("/tmp/mnt", exist_ok=True)
    argv = [path, *PRIVILEGED_RUNS[os.path.basename(path)]]
    done = subprocess.run(argv, capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise OSError(errno.EPERM, f"exit {done.returncode}: {done.stderr[:100]!r}")
    return done.stdout[:100]


def _nosuid(path):
    return bool(os.statvfs(path).f_flag & os.ST_NOSUID)


def _connect(host, port):
    with socket.create_connection((host, port), timeout=2):
        return f"connected to {host}:{port}"


def _connect_unix(path):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(2)
        s.connect(path)
        return f"connected to {path}"


def _status():
    fields = {}
    with open("/proc/self/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in ("Uid", "Gid", "Groups", "CapEff", "CapPrm", "CapBnd", "NoNewPrivs"):
                fields[name] = value.strip()
    return fields


def _fill_tmp():
    path = "/tmp/fill"
    written = 0
    chunk = b"\0" * (1 << 20)
    try:
        with open(path, "wb") as f:
            while written < (1 << 30):
                f.write(chunk)
                f.flush()
                written += len(chunk)
        return {"written_mb": written >> 20, "stopped_by": "nothing"}
    except OSError as exc:
        return {"written_mb": written >> 20, "stopped_by": errno.errorcode.get(exc.errno, "?")}
    finally:
        if os.path.exists(path):
            os.unlink(path)


def _fork_bomb(seconds):
    """Every process forks for `seconds`, then waits to be killed with its process group;
    the first one reports as soon as a limit showed (a fork refused, or a bomb process
    killed at the memory limit), which on a busy machine may take a while."""
    deadline = time.monotonic() + seconds
    me = os.getpid()
    oom_kills = _oom_kills()
    forks = refused = 0
    while time.monotonic() < deadline:
        if os.getpid() == me and (refused or _oom_kills() > oom_kills):
            break
        try:
            pid = os.fork()
        except OSError:
            refused += 1
            time.sleep(0.005)
            continue
        if pid == 0:
            forks = refused = 0
            continue  # the child is a bomb too
        forks += 1
    if os.getpid() != me:
        time.sleep(120)
        os._exit(0)
    return {"forks": forks, "refused": refused, "oom_kills": _oom_kills() - oom_kills}


def _oom_kills():
    """The sandbox's memory cgroup's OOM-kill count (cgroup v2, else v1), 0 if unseen."""
    for path in ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"):
        try:
            with open(path) as f:
                for line in f:
                    name, _, value = line.partition(" ")
                    if name == "oom_kill":
                        return int(value)
        except OSError:
            continue
    return 0


def _redis(victim):
    path = os.environ["SAND_REDIS_SOCKET"]
    own = redis.Redis(
        unix_socket_path=path,
        username=os.environ["SAND_REDIS_USER"],
        password=os.environ["SAND_REDIS_PASSWORD"],
    )
    anonymous = redis.Redis(unix_socket_path=path)
    return {
        "read_victim_data": _attempt(lambda: own.get(f"sand:data:{victim}:local:secret")),
        "write_victim_data": _attempt(lambda: own.set(f"sand:data:{victim}:local:x", "pwned")),
        "read_victim_queue": _attempt(lambda: own.lrange(f"sand:q:{victim}:crash", 0, -1)),
        "list_every_key": _attempt(lambda: own.keys("*")),
        "default_user": _attempt(lambda: anonymous.get(f"sand:app:{victim}")),
        "default_user_guessed": _attempt(lambda: anonymous.execute_command("AUTH", "sand")),
        "acl_list": _attempt(lambda: own.execute_command("ACL", "LIST")),
        "config_get": _attempt(lambda: own.config_get("requirepass")),
    }


def handle(event, context):
    attack = event["attack"]
    if attack == "echo":
        return {"echo": event.get("value")}
    if attack == "status":
        return {"status": _status(), "uid": os.getuid(), "euid": os.geteuid(), "tmp": _tmp_ok()}
    if attack == "read":
        return {path: _attempt(lambda p=path: _read(p)) for path in event["paths"]}
    if attack == "write":
        # besides the given paths: the app, Redis's socket dir and SAND's code, wherever the
        # backend put them
        own = [
            os.environ["SAND_APP_DIR"],
            os.path.dirname(os.environ["SAND_REDIS_SOCKET"]),
            os.path.dirname(os.path.dirname(redis.__file__)),
            os.path.dirname(os.path.abspath(__file__)),
        ]
        return {path: _attempt(lambda p=path: _write(p)) for path in [*event["paths"], *own]}
    if attack == "privileges":
        return {
            "mount_tmpfs": _attempt(_mount_tmpfs),
            "raw_socket": _attempt(_raw_socket),
            "setuid_0": _attempt(lambda: os.setuid(0)),
            "setgid_0": _attempt(lambda: os.setgid(0)),
            "chroot": _attempt(lambda: os.chroot("/tmp")),
            "chown_tmp": _attempt(lambda: os.chown("/tmp", 0, 0)),
        }
    if attack == "setuid-binaries":
        found = _setuid_files()
        runs = [p for p in found if os.path.basename(p) in PRIVILEGED_RUNS]
        return {
            "found": found,
            "on_nosuid_mount": [p for p in found if _nosuid(p)],
            "runs": {p: _attempt(lambda p=p: _run_setuid(p)) for p in runs},
        }
    if attack == "network":
        tcp = {
            f"{host}:{port}": _attempt(lambda h=host, p=port: _connect(h, p))
            for host, port in event["targets"]
        }
        unix = {path: _attempt(lambda p=path: _connect_unix(p)) for path in event["sockets"]}
        return {**tcp, **unix}
    if attack == "redis":
        return _redis(event["victim"])
    if attack == "fill-tmp":
        return _fill_tmp()
    if attack == "fork-bomb":
        return _fork_bomb(float(event.get("seconds", 3)))
    if attack == "memory":
        hoard = []
        while True:
            hoard.append(bytearray(16 << 20))  # touched: bytearray zero-fills its pages
    if attack == "memory-spread":
        return _memory_spread(int(event.get("helpers_mb", 150)), int(event.get("helpers", 2)))
    raise ValueError(f"unknown attack {attack!r}")


def _memory_spread(helper_mb, helpers):
    """Spread memory over processes, each under the per-process address-space limit, until
    the sandbox's total is exceeded: helpers hold ``helper_mb`` each, then this instance
    grows beyond them, so that it is the largest process when the kernel must kill one."""
    pids = []
    for _ in range(helpers):
        pid = os.fork()
        if pid == 0:
            held = bytearray(helper_mb << 20)  # noqa: F841 (touched, and kept)
            time.sleep(60)
            os._exit(0)
        pids.append(pid)
    time.sleep(1.0)  # the helpers touched their memory
    hoard = []
    while True:
        hoard.append(bytearray(16 << 20))
        time.sleep(0.01)


def _tmp_ok():
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"ok-{os.getpid()}")
    with open(path, "w") as f:
        f.write("ok")
    os.unlink(path)
    return os.environ.get("TMPDIR"), os.environ.get("HOME")
