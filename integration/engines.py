"""Real file-sync engines for the integration suite, on 127.0.0.1 only: Syncthing instances
(each with its own --home, GUI/REST port, listen port and API key; no discovery, relays, NAT or
usage reporting), `rclone serve` servers, and finding a process's rclone child through /proc.

Everything started here is stopped by `stop()`; the tests call it from finalizers.
"""

from __future__ import annotations

import copy
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen | None, timeout: float, what: str,
                  log: Path | None = None) -> None:
    """Waits until something accepts connections on 127.0.0.1:port."""
    deadline = time.monotonic() + timeout
    while True:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{what} exited with status {proc.returncode} before listening"
                                 f" on port {port}" + (f"\n--- its log:\n{tail(log)}" if log else ""))
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} does not listen on 127.0.0.1:{port} after {timeout} s"
                                 + (f"\n--- its log:\n{tail(log)}" if log else ""))
        time.sleep(0.05)


def tail(path: Path | None, lines: int = 80) -> str:
    if path is None or not Path(path).exists():
        return "(no log)"
    text = Path(path).read_text(errors="replace").splitlines()
    return "\n".join(text[-lines:])


def stop_process(proc: subprocess.Popen | None, grace: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds; reaps it."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


# ---------------------------------------------------------------------------------------------
# Syncthing

SYNCTHING_TMP_PREFIXES = (".syncthing.", "~syncthing~")


class Syncthing:
    """One Syncthing instance: its home (keys, config, database, log), ports and REST API."""

    def __init__(self, home: Path, name: str):
        self.home = Path(home)
        self.name = name
        self.home.mkdir(parents=True, exist_ok=True)
        self.log = self.home / "syncthing.log"
        self.proc: subprocess.Popen | None = None
        self.gui_port = free_port()
        self.listen_port = free_port()
        self.api_key = secrets.token_hex(16)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("ST")}
        self.env.update({"HOME": str(self.home), "STNODEFAULTFOLDER": "1", "STNOUPGRADE": "1",
                         "STNORESTART": "1", "STNOUPGRADECHECK": "1", "STTRACE": ""})
        r = subprocess.run(["syncthing", "generate", "--home", str(self.home),
                            "--no-default-folder", "--skip-port-probing"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=self.env, timeout=60)
        if r.returncode != 0:
            raise AssertionError(f"syncthing generate failed ({r.returncode}):\n{r.stdout.decode(errors='replace')}")
        root = ET.parse(self.home / "config.xml").getroot()
        self.device_id = root.find("device").get("id")

    # Configuration (written before start)

    def configure(self, peers: list["Syncthing"], folders: dict[str, Path],
                  watcher_delay_s: int = 1) -> None:
        """Rewrites config.xml: GUI on 127.0.0.1:gui_port with our API key, listening only on
        127.0.0.1:listen_port, every peer at its explicit address, each folder (id -> path)
        shared with every peer, and nothing that talks to the world."""
        path = self.home / "config.xml"
        tree = ET.parse(path)
        root = tree.getroot()
        defaults = root.find("defaults")
        for old in root.findall("folder"):
            root.remove(old)
        for old in root.findall("device"):
            if old.get("id") != self.device_id:
                root.remove(old)
        me = root.find("device")
        me.set("name", self.name)
        # the generated folder and device defaults carry every field; copy them
        template_device = defaults.find("device")
        devices = []
        for peer in peers:
            d = copy.deepcopy(template_device)
            d.set("id", peer.device_id)
            d.set("name", peer.name)
            d.set("compression", "never")
            d.find("address").text = f"tcp://127.0.0.1:{peer.listen_port}"
            devices.append(d)
        index = list(root).index(me) + 1
        template_folder = defaults.find("folder")
        for folder_id, folder_path in folders.items():
            f = copy.deepcopy(template_folder)
            f.set("id", folder_id)
            f.set("label", folder_id)
            f.set("path", str(folder_path))
            f.set("rescanIntervalS", "3600")
            f.set("fsWatcherEnabled", "true")
            f.set("fsWatcherDelayS", str(watcher_delay_s))
            for d in f.findall("device"):
                f.remove(d)
            for dev_id in [self.device_id] + [p.device_id for p in peers]:
                e = ET.Element("device", {"id": dev_id, "introducedBy": ""})
                ET.SubElement(e, "encryptionPassword")
                f.insert(1, e)
            f.find("minDiskFree").text = "0"
            root.insert(index, f)
            index += 1
        for d in devices:
            root.insert(index, d)
            index += 1
        gui = root.find("gui")
        gui.set("tls", "false")
        gui.find("address").text = f"127.0.0.1:{self.gui_port}"
        gui.find("apikey").text = self.api_key
        options = root.find("options")
        settings = {
            "listenAddress": f"tcp://127.0.0.1:{self.listen_port}",
            "globalAnnounceEnabled": "false",
            "localAnnounceEnabled": "false",
            "relaysEnabled": "false",
            "natEnabled": "false",
            "urAccepted": "-1",
            "urSeen": "3",
            "startBrowser": "false",
            "autoUpgradeIntervalH": "0",
            "crashReportingEnabled": "false",
            "reconnectionIntervalS": "1",
            "setLowPriority": "false",
            "minHomeDiskFree": "0",
            "announceLANAddresses": "false",
            "progressUpdateIntervalS": "-1",
        }
        for key, value in settings.items():
            element = options.find(key)
            if element is None:
                element = ET.SubElement(options, key)
            element.text = value
        for extra in options.findall("globalAnnounceServer"):
            extra.text = "default"
        for folder_path in folders.values():
            (Path(folder_path) / ".stfolder").mkdir(exist_ok=True)
        tree.write(path)

    # Running

    def start(self, timeout: float = 30) -> None:
        self.log_handle = open(self.log, "ab")
        self.proc = subprocess.Popen(
            ["syncthing", "serve", "--home", str(self.home), "--no-browser", "--no-restart",
             "--no-upgrade", "--gui-address", f"http://127.0.0.1:{self.gui_port}",
             "--gui-apikey", self.api_key],
            stdin=subprocess.DEVNULL, stdout=self.log_handle, stderr=subprocess.STDOUT,
            env=self.env, start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"syncthing {self.name} exited with status {self.proc.returncode}"
                                     f" at start\n--- its log:\n{tail(self.log)}")
            try:
                if self.get("/rest/system/ping").get("ping") == "pong":
                    return
            except (OSError, urllib.error.URLError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"syncthing {self.name}'s REST API did not answer within {timeout} s"
                                     f"\n--- its log:\n{tail(self.log)}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(3)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        if getattr(self, "log_handle", None):
            self.log_handle.close()
            self.log_handle = None

    # REST

    def request(self, method: str, path: str, params: dict | None = None, timeout: float = 30):
        url = f"http://127.0.0.1:{self.gui_port}{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        req = urllib.request.Request(url, method=method, headers={"X-API-Key": self.api_key})
        if method == "POST":
            req.data = b""
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            body = resp.read()
        return json.loads(body) if body.strip() else None

    def get(self, path: str, **params):
        return self.request("GET", path, params or None, timeout=10)

    def scan(self, folder: str) -> None:
        """POST /rest/db/scan, which returns when the scan is done."""
        self.request("POST", "/rest/db/scan", {"folder": folder}, timeout=120)

    def status(self, folder: str) -> dict:
        return self.get("/rest/db/status", folder=folder)

    def completion(self, folder: str, device: str) -> dict:
        return self.get("/rest/db/completion", folder=folder, device=device)

    def connected_to(self, peer: "Syncthing") -> bool:
        conns = self.get("/rest/system/connections").get("connections", {})
        return bool(conns.get(peer.device_id, {}).get("connected"))

    def describe(self) -> str:
        return f"--- syncthing {self.name} ({self.device_id[:7]}) log:\n{tail(self.log)}"


def wait_connected(instances: list[Syncthing], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        missing = [(a.name, b.name) for a in instances for b in instances
                   if a is not b and not a.connected_to(b)]
        if not missing:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"syncthing instances not connected after {timeout} s: {missing}\n"
                                 + "\n".join(i.describe() for i in instances))
        time.sleep(0.2)


def sync_state(instances: list[Syncthing], folder: str) -> tuple[bool, str]:
    """Whether every instance is idle, needs nothing, sees every peer 100% complete, and all
    agree on the global state; and what is not yet so."""
    problems = []
    statuses = {}
    for a in instances:
        st = a.status(folder)
        statuses[a.name] = st
        if st.get("state") != "idle":
            problems.append(f"{a.name} is {st.get('state')!r}")
        if st.get("needTotalItems", 0) != 0:
            problems.append(f"{a.name} needs {st.get('needTotalItems')} items")
        if st.get("errors") or st.get("pullErrors"):
            problems.append(f"{a.name} has errors: {st.get('errors')} pull {st.get('pullErrors')}")
        for b in instances:
            if a is b:
                continue
            c = a.completion(folder, b.device_id)
            if c.get("completion") != 100 or c.get("needItems", 0) or c.get("needDeletes", 0):
                problems.append(f"{a.name} sees {b.name} at {c.get('completion')}% "
                                f"(needItems {c.get('needItems')}, needDeletes {c.get('needDeletes')})")
    keys = ("globalFiles", "globalDirectories", "globalDeleted", "globalBytes", "localFiles",
            "localBytes", "localDirectories")
    shapes = {name: tuple(st.get(k) for k in keys) for name, st in statuses.items()}
    if len(set(shapes.values())) > 1:
        problems.append(f"the instances disagree ({', '.join(keys)}): {shapes}")
    for name, st in statuses.items():
        if st.get("localFiles") != st.get("globalFiles") or st.get("localBytes") != st.get("globalBytes"):
            problems.append(f"{name} local {st.get('localFiles')} files/{st.get('localBytes')} B "
                            f"!= global {st.get('globalFiles')}/{st.get('globalBytes')}")
    return not problems, "; ".join(problems)


def wait_in_sync(instances: list[Syncthing], folder: str, timeout: float = 60,
                 also=None, rescan: bool = True) -> None:
    """Rescans the folder everywhere, then waits until `sync_state` holds twice in a row (and
    `also()`, when given, returns None, else a reason). Fails with each instance's log."""
    if rescan:
        for i in instances:
            i.scan(folder)
    deadline = time.monotonic() + timeout
    good = 0
    why = "not checked yet"
    last_scan = time.monotonic()
    while True:
        try:
            ok, why = sync_state(instances, folder)
        except (OSError, urllib.error.URLError, ValueError) as e:
            ok, why = False, f"REST API error: {e}"
        if ok and also is not None:
            extra = also()
            if extra:
                ok, why = False, extra
        good = good + 1 if ok else 0
        if good >= 2:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"the Syncthing folder {folder!r} is not in sync after {timeout} s: {why}\n"
                                 + "\n".join(i.describe() for i in instances))
        if not ok and time.monotonic() - last_scan > 5:
            # an fs-watcher event may have been missed while a file was still growing
            for i in instances:
                try:
                    i.scan(folder)
                except (OSError, urllib.error.URLError):
                    pass
            last_scan = time.monotonic()
        time.sleep(0.25)


# ---------------------------------------------------------------------------------------------
# rclone

class RcloneServer:
    """`rclone serve PROTOCOL` of a local folder on 127.0.0.1:port."""

    def __init__(self, protocol: str, root: Path, workdir: Path, extra: list[str] = ()):
        self.protocol = protocol
        self.root = Path(root)
        self.port = free_port()
        self.log = Path(workdir) / f"rclone-serve-{protocol}-{self.port}.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("RCLONE_")}
        env["RCLONE_CONFIG"] = str(Path(workdir) / "rclone-serve.conf")   # none: defaults
        self.log_handle = open(self.log, "ab")
        self.proc = subprocess.Popen(
            ["rclone", "serve", protocol, "--addr", f"127.0.0.1:{self.port}", *extra, str(self.root)],
            stdin=subprocess.DEVNULL, stdout=self.log_handle, stderr=subprocess.STDOUT, env=env,
            start_new_session=True)
        wait_for_port(self.port, self.proc, 30, f"rclone serve {protocol}", self.log)

    def stop(self) -> None:
        stop_process(self.proc)
        self.log_handle.close()

    def describe(self) -> str:
        return f"--- rclone serve {self.protocol} log:\n{tail(self.log)}"


def children(pid: int) -> list[tuple[int, str, list[str]]]:
    """(pid, comm, argv) of the direct children of `pid`, from /proc."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            # the comm field may hold spaces and parentheses: split after the last ')'
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            if ppid != pid:
                continue
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            out.append((int(entry), comm, [a.decode(errors="replace") for a in argv if a]))
        except (OSError, ValueError, IndexError):
            continue
    return out


def rclone_children(pid: int) -> list[tuple[int, list[str]]]:
    return [(p, argv) for p, comm, argv in children(pid) if comm == "rclone"]


def have(program: str) -> bool:
    return shutil.which(program) is not None
