#!/usr/bin/env python3
"""`stepscope report` opened in a real browser: headless Chromium, driven over the DevTools
protocol on a pipe (--remote-debugging-pipe, standard library only), with the network disabled.

For each report it writes (real samples, several steps on two sides with a regression gate, two
ranks, the efficiency and collectives of hand-made traces, and a trace whose names are hostile
markup) it checks that:
  - the file is under a few MB and names no http(s):// resource;
  - the page loads with no console message, no exception, and no request but the file itself;
  - the page has no <script>, no on* attribute, no link leaving the page, and the hostile names
    are in it as text;
  - every figure's data-value is the value at its data-ptr in the JSON its section's command
    prints (`stepscope ARGS`, ARGS from the section's data-argv), and its text is not empty;
  - a screenshot of each section is not blank.
First it checks itself on a control page that logs an error and fetches an image: the browser must
report both, or these checks could not fail.
Exit 0 when all hold, 1 with the failures listed, 77 (skipped) when there is no Chromium.
"""
import argparse
import base64
import html.parser
import json
import math
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

MAX_BYTES = 4 * 1024 * 1024
HOSTILE = [
    '<script>alert("k")</script>',
    '"><img src=x onerror=alert(1)>',
    "' onmouseover='alert(2)",
    '</style><a href="https://example.com/x">link</a>',
    '<svg onload=alert(3)>',
    '&amp;lt;not an entity',
]


class Browser:
    """Chromium with DevTools on fds 3 (commands) and 4 (replies, events), NUL-separated JSON."""

    def __init__(self, chromium, profile):
        to_r, self.to_w = os.pipe()
        self.from_r, from_w = os.pipe()

        def fds():
            # Via fresh numbers first, in case either end already sits on 3 or 4.
            r, w = os.dup(to_r), os.dup(from_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             # The network is off: no proxy answers, no name resolves.
             "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
             "--user-data-dir=" + profile, "about:blank"],
            close_fds=False, preexec_fn=fds, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self.buffer = b""
        self.next_id = 0
        self.events = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(domain + ".enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False}, session=True)

    def _read(self, timeout):
        deadline = time.time() + timeout
        while b"\0" not in self.buffer:
            left = deadline - time.time()
            if left <= 0 or not select.select([self.from_r], [], [], left)[0]:
                raise TimeoutError("no answer from Chromium")
            chunk = os.read(self.from_r, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed its DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, params=None, session=False, timeout=30):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self.to_w, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read(timeout)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(method + ": " + json.dumps(reply["error"]))
                return reply["result"]
            self.events.append(reply)

    def load(self, url):
        """Navigates, waits for the load event and a moment more; returns the page's events."""
        self.events = []
        self.call("Page.navigate", {"url": url}, session=True)
        deadline = time.time() + 30
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self.events.append(self._read(deadline - time.time()))
        end = time.time() + 0.3
        try:
            while True:
                self.events.append(self._read(max(0.01, end - time.time())))
        except TimeoutError:
            pass
        return self.events

    def evaluate(self, expression):
        # DevTools' own evaluation: the page runs no script of its own (its policy forbids any).
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True)
        if "exceptionDetails" in result:
            raise RuntimeError("evaluate: " + json.dumps(result["exceptionDetails"]))
        return result["result"]["value"]

    def close(self):
        self.proc.kill()
        self.proc.wait()


def problems_of(events, own_url):
    """Console messages, exceptions, log entries and requests for anything but the page itself."""
    found = []
    for e in events:
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.consoleAPICalled":
            found.append("console.%s: %s" % (p.get("type"), " ".join(str(a.get("value", a.get("description")))
                                                                      for a in p.get("args", []))))
        elif m == "Runtime.exceptionThrown":
            found.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:300])
        elif m == "Log.entryAdded":
            entry = p.get("entry", {})
            found.append("log %s: %s" % (entry.get("level"), entry.get("text")))
        elif m == "Network.requestWillBeSent":
            url = p.get("request", {}).get("url", "")
            if url.split("#")[0] != own_url:
                found.append("request: " + url)
    return found


def png_is_blank(png_bytes, path):
    """Blank: one colour, or nearly (ImageMagick counts the colours and their spread). The
    screenshot stays at `path` for a person to look at."""
    with open(path, "wb") as f:
        f.write(png_bytes)
    out = subprocess.run(["convert", path, "-format", "%k %[fx:standard_deviation]", "info:"],
                         capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]) < 4 or float(out[1]) < 0.01


UNITS = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9, "B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3,
         "TiB": 1024 ** 4, "%": 0.01, "": 1}


SI = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}


def shown_matches(text, value):
    """Whether a figure's text ("57.785 ms", "2.95 GiB", "19.7%", "1,337", "1h02m", "42.9 TFLOP/s") reads as `value`
    to the precision it shows."""
    text = text.strip()
    m = re.fullmatch(r"(-?)(\d+)h(\d\d)m|(-?)(\d+)m(\d\d)s", text)
    if m:
        g = m.groups()
        seconds = (int(g[1]) * 3600 + int(g[2]) * 60) if g[1] else (int(g[4]) * 60 + int(g[5]))
        return abs(abs(value) / 1e9 - seconds) <= (60 if g[1] else 1)
    # Rates and FLOPs to three significant digits with an SI prefix ("42.9 TFLOP/s", "3.35 TB/s").
    m = re.fullmatch(r"(-?\d*\.?\d+(?:e[+-]\d+)?) ([kMGTPE]?)(FLOP/s|FLOP|B/s)", text)
    if m:
        number = float(m.group(1)) * SI[m.group(2)]
        last_digit = 10 ** (math.floor(math.log10(abs(number))) - 2) if number else 1
        return abs(number - value) <= 0.5 * last_digit * 1.001 + 1e-9
    m = re.fullmatch(r"(-?[\d,]*\.?\d+)\s*(ns|us|ms|s|B|KiB|MiB|GiB|TiB|%|)", text)
    if not m:
        return False
    number, unit = m.group(1).replace(",", ""), m.group(2)
    digits = len(number.split(".")[1]) if "." in number else 0
    # Half a unit of the last digit shown, and a little for the rounding of the value itself.
    tolerance = 0.5 * 10 ** -digits * UNITS[unit] * 1.001 + 1e-9
    return abs(float(number) * UNITS[unit] - value) <= tolerance


def resolve(doc, pointer):
    for part in pointer.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


class MarkupScan(html.parser.HTMLParser):
    """Attribute values and style text that name a resource by URL."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found = []
        self.in_style = False

    def handle_starttag(self, tag, attrs):
        self.in_style = tag == "style"
        for name, value in attrs:
            if value and re.search(r"(https?|ftp|wss?):|//", value) and name not in ("content", "data-argv"):
                self.found.append("<%s %s=%r> names a resource" % (tag, name, value[:80]))

    def handle_endtag(self, tag):
        self.in_style = False

    def handle_data(self, text):
        if self.in_style and re.search(r"url\(|@import|https?:", text):
            self.found.append("the style fetches: " + text[:80])


def hostile_trace(path):
    """A PyTorch-profiler-like trace whose op, kernel, thread and process names are markup."""
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": HOSTILE[3]}},
              {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": HOSTILE[4]}},
              {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
              {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 5000}]
    for i, name in enumerate(HOSTILE):
        t = 100 + i * 700
        events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": t, "dur": 600})
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": t + 10, "dur": 20, "args": {"correlation": i + 1}})
        events.append({"ph": "X", "cat": "kernel", "name": "k" + name, "pid": 0, "tid": 7, "ts": t + 40,
                       "dur": 300 + 50 * i, "args": {"device": 0, "stream": 7, "correlation": i + 1}})
    with open(path, "w") as f:
        json.dump({"traceEvents": events}, f)


def check_report(browser, stepscope, html_path, work, failures, hostile=False):
    label = os.path.basename(html_path)
    data = open(html_path, "rb").read()
    if len(data) > MAX_BYTES:
        failures.append("%s: %d bytes, over %d" % (label, len(data), MAX_BYTES))
    # A URL may appear only as text (a name from a trace, escaped): in no attribute, no style.
    scan = MarkupScan()
    scan.feed(data.decode("utf-8"))
    failures.extend("%s: %s" % (label, p) for p in scan.found)
    url = "file://" + os.path.abspath(html_path)
    problems = problems_of(browser.load(url), url)
    failures.extend("%s: %s" % (label, p) for p in problems)

    markup = browser.evaluate("""(() => {
      const all = [...document.querySelectorAll('*')];
      return {scripts: document.scripts.length,
              handlers: all.flatMap(e => [...e.attributes].filter(a => /^on/i.test(a.name)).map(a => e.tagName + ' ' + a.name)),
              links: [...document.querySelectorAll('[href],[src],[xlink\\\\:href]')].map(e => e.getAttribute('href') || e.getAttribute('src') || '')
                       .filter(h => !h.startsWith('#')),
              text: document.body.innerText};
    })()""")
    if markup["scripts"]:
        failures.append("%s: %d <script> elements" % (label, markup["scripts"]))
    failures.extend("%s: event handler attribute %s" % (label, h) for h in markup["handlers"])
    failures.extend("%s: a link leaving the page: %s" % (label, h) for h in markup["links"])
    if hostile:
        for name in HOSTILE:
            if name not in markup["text"]:
                failures.append("%s: the hostile name %r is not shown as text" % (label, name))

    sections = browser.evaluate("""[...document.querySelectorAll('section')].map(s => {
      const r = s.getBoundingClientRect();
      return {id: s.id, x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height,
              argv: [...s.querySelectorAll('pre.cmd')].map(p => JSON.parse(p.dataset.argv)),
              figures: [...s.querySelectorAll('[data-ptr]')].map(e => ({cmd: +e.dataset.cmd, ptr: e.dataset.ptr,
                         value: e.dataset.value, text: e.textContent}))};
    })""")
    documents = {}
    figures = 0
    for s in sections:
        for fig in s["figures"]:
            if fig["cmd"] >= len(s["argv"]):
                failures.append("%s #%s: figure %s names command %d of %d" % (label, s["id"], fig["ptr"], fig["cmd"], len(s["argv"])))
                continue
            argv = s["argv"][fig["cmd"]]
            key = json.dumps(argv)
            if key not in documents:
                run = subprocess.run([stepscope] + argv, capture_output=True, text=True)
                documents[key] = json.loads(run.stdout) if run.stdout.strip() else None
            try:
                expected = resolve(documents[key], fig["ptr"])
            except (KeyError, IndexError, TypeError):
                failures.append("%s #%s: %s not in `stepscope %s`" % (label, s["id"], fig["ptr"], " ".join(argv)))
                continue
            figures += 1
            if json.loads(fig["value"]) != expected:
                failures.append("%s #%s: %s is %s in the page, %s in `stepscope %s`" %
                                (label, s["id"], fig["ptr"], fig["value"], expected, " ".join(argv)))
            if not shown_matches(fig["text"], float(expected)):
                failures.append("%s #%s: %s shows %r for %s" % (label, s["id"], fig["ptr"], fig["text"], expected))
        shot = browser.call("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": s["x"], "y": s["y"], "width": s["width"], "height": min(s["height"], 4000), "scale": 1}},
            session=True)
        if png_is_blank(base64.b64decode(shot["data"]), os.path.join(work, "%s.%s.png" % (label[:-5], s["id"]))):
            failures.append("%s #%s: the section's screenshot is blank" % (label, s["id"]))
    if figures < 20:
        failures.append("%s: only %d figures checked against the JSON" % (label, figures))
    print("%s: %d bytes, %d sections, %d figures equal to the CLI's JSON, %d commands" %
          (label, len(data), len(sections), figures, len(documents)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stepscope", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium or not shutil.which("convert"):
        print("skipped: needs chromium and ImageMagick's convert (scripts/install-deps.sh)")
        return 77
    stepscope = os.path.abspath(args.stepscope)
    src = args.source_dir
    work = args.work
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    hostile_trace(os.path.join(work, "hostile.json"))
    lstm = os.path.join(src, "tests/data/trainer/lstm_run_steps")
    runs = {
        "resnet50.html": [os.path.join(src, "samples/h100_resnet50_b32_step3.pb.gz"), "--device", "h100-sxm"],
        "alexnet.html": [os.path.join(src, "tests/data/pytorch_kineto_alexnet_train.json.gz")],
        "ranks.html": [os.path.join(src, "tests/data/analysis/ranks")],
        # Figures of the efficiency and collectives sections (the samples have no shapes, no collective).
        "efficiency.html": [os.path.join(src, "tests/data/efficiency/h100_mm_step.json")],
        "nccl.html": [os.path.join(src, "tests/data/collectives/nccl_constructed.json")],
        "lstm_vs.html": [os.path.join(lstm, "lstm_small_step7.pb.gz"), os.path.join(lstm, "lstm_small_step8.pb.gz"),
                         "--vs", os.path.join(lstm, "lstm_small_step9.pb.gz"),
                         os.path.join(lstm, "lstm_small_step10.pb.gz"), "--fail-on-regression", "5"],
        "hostile.html": [os.path.join(work, "hostile.json")],
    }
    failures = []
    profile = tempfile.mkdtemp(prefix="chromium-", dir=work)
    browser = Browser(chromium, profile)
    try:
        # The checks must be able to fail: a page that logs and fetches is caught.
        control = os.path.join(work, "control.html")
        with open(control, "w") as f:
            f.write('<!DOCTYPE html><p>control</p><img src="http://198.51.100.7/x.png">'
                    '<script>console.error("control")</script>')
        caught = problems_of(browser.load("file://" + control), "file://" + control)
        if not any(p.startswith("console.error") for p in caught) or not any(p.startswith("request: http") for p in caught):
            failures.append("the browser did not report the control page's console error and request: " + repr(caught))
        for name, report_args in runs.items():
            out = os.path.join(work, name)
            run = subprocess.run([stepscope, "report"] + report_args + ["-o", out], capture_output=True, text=True)
            if run.returncode not in (0, 3) or not os.path.exists(out):
                failures.append("%s: stepscope report exited %d: %s" % (name, run.returncode, run.stderr))
                continue
            try:
                check_report(browser, stepscope, out, work, failures, hostile=name == "hostile.html")
            except (RuntimeError, ValueError, KeyError, TypeError) as e:
                failures.append("%s: %s" % (name, str(e)[:300]))
    finally:
        browser.close()
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
