"""A widget in a real browser: JupyterLab started the way `./course.sh lab` starts it, a notebook
opened in headless Chromium (driven over the Chrome DevTools Protocol, with websocket-client,
which jupyter_server already needs), its widget cell run, a slider dragged, the picture redrawn.

Skips, visibly, without Chromium (`apt-get install chromium`; `.ci/run` installs it as root).
The screenshot is saved under $GRADER_ARTIFACTS (default: <tmp>/grader-artifacts) and its path printed.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = next(
    (
        p
        for p in (
            os.environ.get("CHROMIUM"),
            shutil.which("chromium"),
            shutil.which("chromium-browser"),
            shutil.which("google-chrome"),
        )
        if p
    ),
    None,
)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,1100",
]
# The notebook: the widget of kernels/01_naive.cu, drawn from its access trace on the CPU backend.
CELL = f"""import sys
sys.path.insert(0, {str(ROOT)!r})
from grader import widgets
widgets.thread_map({str(ROOT / "kernels" / "01_naive.cu")!r}, "naive")"""

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (apt-get install chromium)"),
    pytest.mark.slow,
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(what: str, fn, timeout: float, every: float = 0.25):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = fn()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def _stop(proc):
    """End a process this test started, and its process group (JupyterLab's kernels, Chromium's helpers)."""
    import signal

    proc.terminate()
    try:
        proc.wait(3)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait(10)


class Page:
    """One Chromium tab over the DevTools Protocol."""

    def __init__(self, ws_url: str):
        import websocket

        self.ws = websocket.create_connection(ws_url, timeout=30, suppress_origin=True)
        self.n = 0

    def send(self, method: str, **params):
        self.n += 1
        self.ws.send(json.dumps({"id": self.n, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.n:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def js(self, expr: str):
        r = self.send("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr[:80]}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def key(self, key: str, code: str, vk: int, modifiers: int = 0):
        for kind in ("rawKeyDown", "keyUp"):
            self.send(
                "Input.dispatchKeyEvent", type=kind, key=key, code=code, windowsVirtualKeyCode=vk, modifiers=modifiers
            )

    def drag(self, x0: float, y: float, x1: float):
        self.send("Input.dispatchMouseEvent", type="mouseMoved", x=x0, y=y)
        self.send("Input.dispatchMouseEvent", type="mousePressed", x=x0, y=y, button="left", clickCount=1)
        for i in range(1, 11):
            self.send(
                "Input.dispatchMouseEvent", type="mouseMoved", x=x0 + (x1 - x0) * i / 10, y=y, button="left", buttons=1
            )
        self.send("Input.dispatchMouseEvent", type="mouseReleased", x=x1, y=y, button="left", clickCount=1)

    def screenshot(self, path: Path):
        import base64

        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", format="png")["data"]))


@pytest.fixture
def lab(tmp_path):
    """JupyterLab serving a one-cell notebook, as `course.sh lab` runs it (plus headless, a free
    port, a token, --allow-root when root); yields (url of the notebook, the server's log)."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(CELL)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (tmp_path / "nb").mkdir()
    nbformat.write(nb, tmp_path / "nb" / "widget.ipynb")
    port, token = _free_port(), os.urandom(12).hex()
    # user settings of this run only: start the notebook's kernel without asking, no news pop-up
    settings = tmp_path / "settings"
    for ext, value in (
        ("notebook-extension/tracker", {"autoStartDefaultKernel": True}),
        ("apputils-extension/notification", {"fetchNews": "false", "checkForUpdates": False}),
    ):
        path = settings / "@jupyterlab" / f"{ext}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(tmp_path / "cfg"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"),
        IPYTHONDIR=str(tmp_path / "ipy"),
        JUPYTERLAB_SETTINGS_DIR=str(settings),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "ws"),
        PYTHONPATH=str(ROOT),
        MPLBACKEND="module://matplotlib_inline.backend_inline",
    )
    cmd = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        str(tmp_path / "nb"),
        "--no-browser",
        f"--port={port}",
        "--ServerApp.ip=127.0.0.1",
        f"--IdentityProvider.token={token}",
        f"--LabApp.workspaces_dir={tmp_path / 'ws'}",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(tmp_path / "lab.log", "w+")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        # meanwhile, build the kernel the cell draws into the same cache (the notebook's kernel finds it)
        from grader.judge import profile

        profile.run("naive", ROOT / "kernels" / "01_naive.cu", (40, 36, 24), blocks=[(0, 0, 0)], resources=False)

        def up():
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2)
                return True
            except OSError:
                assert proc.poll() is None, "JupyterLab exited:\n" + (tmp_path / "lab.log").read_text()[-3000:]
                return False

        _wait("JupyterLab to start", up, 40)
        yield f"http://127.0.0.1:{port}/lab/tree/widget.ipynb?token={token}", tmp_path / "lab.log"
    finally:
        _stop(proc)
        log.close()


@pytest.fixture
def browser(tmp_path):
    profile_dir = tmp_path / "chromium"
    proc = subprocess.Popen(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile_dir}", "--remote-debugging-port=0", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        port_file = profile_dir / "DevToolsActivePort"
        port = int(
            _wait("Chromium's DevTools port", lambda: port_file.is_file() and port_file.read_text().split(), 20)[0]
        )
        yield port
    finally:
        _stop(proc)


def test_widget_renders_and_a_slider_redraws_it(lab, browser):
    url, lab_log = lab
    targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{browser}/json/list"))
    page = Page(next(t for t in targets if t["type"] == "page")["webSocketDebuggerUrl"])
    page.send("Page.enable")
    page.send("Page.navigate", url=url)
    out = Path(os.environ.get("GRADER_ARTIFACTS", Path(tempfile.gettempdir()) / "grader-artifacts"))
    out.mkdir(parents=True, exist_ok=True)
    shot = out / "browser_widget.png"
    try:
        # the notebook open, its kernel idle, then run the cell (Shift+Enter in the cell)
        _wait(
            "the notebook's cell", lambda: page.js("!!document.querySelector('.jp-Notebook .jp-Cell .cm-content')"), 40
        )
        _wait(
            "the kernel",
            lambda: page.js(
                "/ipykernel|Python/.test((document.querySelector('.jp-Toolbar-kernelName') || {}).textContent || '')"
                " && !!document.querySelector('.jp-Notebook-ExecutionIndicator[data-status=\"idle\"]')"
            ),
            40,
        )
        page.screenshot(shot)
        page.js("document.querySelector('.jp-Notebook .jp-Cell .cm-content').focus()")
        page.key("Enter", "Enter", 13, modifiers=8)  # Shift+Enter
        # rendered: the widget's box, its sliders and its picture
        src = _wait(
            "the widget to render",
            lambda: page.js(
                "(() => { const w = document.querySelector('.grader-widget img');"
                " return w && w.src && w.naturalWidth > 100 ? w.src : null })()"
            ),
            40,
        )
        sliders = page.js("document.querySelectorAll('.grader-widget .widget-slider').length")
        assert sliders >= 2, "the thread map shows block and thread sliders"
        page.screenshot(shot)
        # drag the last slider's handle (thread y) to the right: the picture must change
        box = page.js(
            "(() => { const hs = document.querySelectorAll('.grader-widget .noUi-handle');"
            " const h = hs[hs.length - 1]; h.scrollIntoView({block: 'center'});"
            " const r = h.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2] })()"
        )
        readout = (
            "(() => { const r = document.querySelectorAll('.grader-widget .widget-readout');"
            " return r[r.length - 1].textContent })()"
        )
        before = page.js(readout)
        page.drag(box[0], box[1], box[0] + 60)
        _wait("the slider to move", lambda: page.js(readout) != before, 10)
        _wait(
            "the picture to change",
            lambda: page.js("(document.querySelector('.grader-widget img')||{}).src") not in (None, src),
            30,
        )
        page.screenshot(shot)
        print(f"\nscreenshot: {shot} (slider readout {before} -> {page.js(readout)})")
    except AssertionError:
        page.screenshot(shot)
        print(
            page.js(
                "[...document.querySelectorAll('.jp-Toolbar-kernelStatus, .jp-Notebook-ExecutionIndicator')]"
                ".map(e => e.outerHTML.slice(0, 400)).join('\\n')"
            )
        )
        print(f"\nscreenshot: {shot}\nJupyterLab log:\n{lab_log.read_text()[-3000:]}")
        raise
