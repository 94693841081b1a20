"""A small driver for headless Chromium (Debian's `chromium`) over the DevTools protocol,
for the HTML viewer's tests: open a page, evaluate JavaScript, click, take a screenshot,
and collect console errors, uncaught exceptions, JavaScript dialogs (alert) and network
requests.

It talks to the browser through --remote-debugging-pipe (JSON messages ending in a NUL
byte on file descriptors 3 and 4 of the browser), so it needs nothing but the Python
standard library: no websocket module, no npm, no port.

As a script:
    python3 cdp_browser.py screenshot PAGE.html OUT.png [--select] [--size 1400x1000]
    python3 cdp_browser.py timing PAGE.html     # the viewer's render timings, as JSON
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")


def find_chromium():
    """The path of a Chromium binary, or None."""
    env = os.environ.get("PYPROF_CHROMIUM")
    if env:
        return env
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserError(Exception):
    pass


class Browser(object):
    """One headless Chromium with one page.  Use as a context manager."""

    def __init__(self, width=1400, height=1000, timeout=60.0):
        self.timeout = timeout
        self.exe = find_chromium()
        if not self.exe:
            raise BrowserError("no chromium on PATH (Debian package `chromium`)")
        self.profile_dir = tempfile.mkdtemp(prefix="pyprof-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        args = [self.exe, "--headless=new", "--no-sandbox", "--disable-gpu",
                "--remote-debugging-pipe", "--user-data-dir=" + self.profile_dir,
                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-default-apps", "--mute-audio",
                "--hide-scrollbars", "--disable-dev-shm-usage",
                "--window-size=%d,%d" % (width, height),
                "about:blank"]
        # bash (dash takes one-digit descriptors only) puts the pipes on descriptors 3
        # and 4, where the browser expects them.
        cmd = 'exec "$@" 3<&%d 4>&%d' % (to_browser_r, from_browser_w)
        self.stderr_path = os.path.join(self.profile_dir, "stderr.txt")
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(["bash", "-c", cmd, "bash"] + args,
                                     pass_fds=(to_browser_r, from_browser_w),
                                     stdin=subprocess.DEVNULL, stdout=self._stderr,
                                     stderr=self._stderr)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._next_id = 0
        self._lock = threading.Condition()
        self._responses = {}
        self._closed = False
        self.events = []        # every event: (method, params, sessionId)
        self.console_errors = []
        self.dialogs = []
        self.requests = []
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()
        self.session = None
        try:
            target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)
            self.session = self.call("Target.attachToTarget",
                                     {"targetId": target["targetId"], "flatten": True},
                                     session=False)["sessionId"]
            for domain in ("Page", "Runtime", "Log", "Network"):
                self.call(domain + ".enable")
            self.call("Emulation.setDeviceMetricsOverride",
                      {"width": width, "height": height, "deviceScaleFactor": 1,
                       "mobile": False})
        except Exception:
            self.close()
            raise

    # ---- plumbing --------------------------------------------------------------------

    def _read_loop(self):
        buf = b""
        while True:
            try:
                chunk = os.read(self._from_browser, 1 << 20)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                try:
                    msg = json.loads(raw.decode("utf-8"))
                except ValueError:
                    continue
                self._dispatch(msg)
        with self._lock:
            self._closed = True
            self._lock.notify_all()

    def _dispatch(self, msg):
        if "id" in msg:
            with self._lock:
                self._responses[msg["id"]] = msg
                self._lock.notify_all()
            return
        method, params = msg.get("method"), msg.get("params", {})
        with self._lock:
            self.events.append((method, params, msg.get("sessionId")))
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error",
                                                                               "assert"):
                text = " ".join(str(a.get("value", a.get("description", "")))
                                for a in params.get("args", []))
                self.console_errors.append("console.%s: %s" % (params["type"], text))
            elif method == "Runtime.exceptionThrown":
                d = params.get("exceptionDetails", {})
                exc = d.get("exception", {}).get("description") or d.get("text")
                self.console_errors.append("uncaught: %s (line %s)" % (exc, d.get("lineNumber")))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                e = params["entry"]
                self.console_errors.append("log: %s %s" % (e.get("text"), e.get("url", "")))
            elif method == "Network.requestWillBeSent":
                self.requests.append(params.get("request", {}).get("url"))
            self._lock.notify_all()
        if method == "Page.javascriptDialogOpening":
            self.dialogs.append(params.get("message"))
            # Answer from another thread: this one must go on reading.
            threading.Thread(target=self._dismiss_dialog, daemon=True).start()

    def _dismiss_dialog(self):
        try:
            self.call("Page.handleJavaScriptDialog", {"accept": False})
        except BrowserError:
            pass

    def call(self, method, params=None, session=True, timeout=None):
        """Sends one command and returns its result; raises BrowserError on an error."""
        with self._lock:
            self._next_id += 1
            mid = self._next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        data = json.dumps(msg).encode("utf-8") + b"\0"
        try:
            while data:
                n = os.write(self._to_browser, data)
                data = data[n:]
        except OSError as e:
            raise BrowserError("%s: the browser is gone (%s)%s" % (method, e, self._tail()))
        deadline = time.time() + (timeout or self.timeout)
        with self._lock:
            while mid not in self._responses:
                left = deadline - time.time()
                if self._closed or left <= 0:
                    raise BrowserError("%s: %s%s" % (
                        method, "the browser closed" if self._closed else "no answer",
                        self._tail()))
                self._lock.wait(left)
            resp = self._responses.pop(mid)
        if "error" in resp:
            raise BrowserError("%s: %s" % (method, resp["error"]))
        return resp.get("result", {})

    def _tail(self):
        try:
            with open(self.stderr_path, "rb") as f:
                return "\nbrowser stderr:\n" + f.read()[-2000:].decode("utf-8", "replace")
        except OSError:
            return ""

    def wait_event(self, method, timeout=None, since=0):
        """Waits for an event `method` among events[since:]; returns its params."""
        deadline = time.time() + (timeout or self.timeout)
        with self._lock:
            while True:
                for m, p, _ in self.events[since:]:
                    if m == method:
                        return p
                left = deadline - time.time()
                if self._closed or left <= 0:
                    raise BrowserError("no %s event%s" % (method, self._tail()))
                self._lock.wait(left)

    # ---- what the tests use -------------------------------------------------------------

    def open(self, path, ready_expr="document.body && document.body.dataset.ready === '1'"):
        """Navigates to a local file and waits for its load event and for `ready_expr`.
        Returns the wall-clock seconds from the navigation to `ready_expr`."""
        url = "file://" + os.path.abspath(path)
        since = len(self.events)
        t0 = time.time()
        res = self.call("Page.navigate", {"url": url})
        if res.get("errorText"):
            raise BrowserError("navigate %s: %s" % (url, res["errorText"]))
        self.wait_event("Page.loadEventFired", since=since)
        self.wait_for(ready_expr)
        return time.time() - t0

    def evaluate(self, expr):
        """The value of a JavaScript expression (awaited if a promise)."""
        res = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                             "awaitPromise": True})
        if "exceptionDetails" in res:
            d = res["exceptionDetails"]
            raise BrowserError("evaluate %r: %s" % (
                expr, d.get("exception", {}).get("description") or d.get("text")))
        return res.get("result", {}).get("value")

    def wait_for(self, expr, timeout=None):
        deadline = time.time() + (timeout or self.timeout)
        while not self.evaluate("!!(%s)" % expr):
            if time.time() > deadline:
                raise BrowserError("timed out waiting for %s; console errors: %s" % (
                    expr, self.console_errors))
            time.sleep(0.05)

    def click(self, x, y):
        """A real left click (press and release) at client coordinates."""
        base = {"x": x, "y": y, "button": "left", "clickCount": 1}
        self.call("Input.dispatchMouseEvent", dict(base, type="mouseMoved", button="none"))
        self.call("Input.dispatchMouseEvent", dict(base, type="mousePressed"))
        self.call("Input.dispatchMouseEvent", dict(base, type="mouseReleased"))

    def drag(self, x0, y0, x1, y1, steps=5):
        self.call("Input.dispatchMouseEvent", {"type": "mousePressed", "x": x0, "y": y0,
                                               "button": "left", "clickCount": 1})
        for i in range(1, steps + 1):
            self.call("Input.dispatchMouseEvent", {
                "type": "mouseMoved", "button": "left", "buttons": 1,
                "x": x0 + (x1 - x0) * i / steps, "y": y0 + (y1 - y0) * i / steps})
        self.call("Input.dispatchMouseEvent", {"type": "mouseReleased", "x": x1, "y": y1,
                                               "button": "left", "clickCount": 1})

    def type_text(self, text):
        self.call("Input.insertText", {"text": text})

    def screenshot(self, path, full_page=True):
        params = {"format": "png"}
        if full_page:
            m = self.call("Page.getLayoutMetrics")
            size = m.get("cssContentSize") or m.get("contentSize")
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": size["width"],
                                "height": size["height"], "scale": 1})
        import base64
        data = base64.b64decode(self.call("Page.captureScreenshot", params)["data"])
        with open(path, "wb") as f:
            f.write(data)
        return len(data)

    def close(self):
        if self.proc.poll() is None:
            try:
                self.call("Browser.close", session=False, timeout=5)
            except BrowserError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        self._stderr.close()
        shutil.rmtree(self.profile_dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def select_deepest(b, thread=None):
    """Clicks the deepest sample of the thread named `thread` (default: the busiest thread
    shown) in the viewer's timeline; returns what the viewer says is drawn there
    ({x, y, stack})."""
    threads = b.evaluate("pyprofViewer.threads()")
    shown = set(b.evaluate("pyprofViewer.rows()"))
    pick = [t for t in threads if t["index"] in shown and thread in (None, t["name"])]
    if not pick:
        raise BrowserError("no thread %r in the timeline" % thread)
    busiest = max(pick, key=lambda t: t["samples"])
    col = b.evaluate("pyprofViewer.deepestColumn(%d)" % busiest["index"])
    b.click(col["x"], col["y"])
    b.wait_for("pyprofViewer.selection()")
    b.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": 0, "y": 0})
    return col


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("screenshot", "timing"))
    ap.add_argument("page")
    ap.add_argument("out", nargs="?", help="the PNG (screenshot)")
    ap.add_argument("--size", default="1400x1000", help="viewport WIDTHxHEIGHT")
    ap.add_argument("--select", nargs="?", const="", metavar="THREAD",
                    help="click the deepest sample of THREAD (default: the busiest) first")
    a = ap.parse_args(argv)
    w, h = (int(x) for x in a.size.split("x"))
    with Browser(w, h) as b:
        wall = b.open(a.page)
        if a.select is not None:
            select_deepest(b, a.select or None)
        if a.what == "timing":
            t = b.evaluate("pyprofViewer.timings")
            t["wall_s"] = wall
            print(json.dumps(t))
        else:
            if not a.out:
                ap.error("screenshot needs OUT")
            b.screenshot(a.out)
        if b.console_errors:
            print("console errors: %s" % b.console_errors, file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
