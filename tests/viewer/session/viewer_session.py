#!/usr/bin/env python3
"""A person's session with stepscope-view, in a real X window (Xvfb), driven with xdotool.

Opens a trace, zooms (W/S, Ctrl+wheel), pans (A/D, drag), clicks a slice, searches (Ctrl+F,
Enter, F3), goes back to the timeline (Esc), selects a range, opens every pane, drops a marker
(M) and finds it in the Markers pane, Ctrl+clicks two slices and finds them in the Call tree pane,
filters the tracks, checks the counter tracks are drawn, shows the keys (?), switches to the dark
theme and back, and exports through File > Export (Chrome JSON,
Perfetto protobuf); each export is read back with `stepscope summary`. Where to click comes from the viewer itself: run with
STEPSCOPE_VIEW_PROBE=FILE, it writes FILE (what it shows, in screen coordinates) on SIGUSR1
(viewer/app/session_probe.h). Each step takes a screenshot of the screen (ImageMagick's
`import`) and checks its content against that description, not against stored pixels: not
blank, every visible lane labelled, the slices drawn in their colours, names written in the wide
ones, the selection drawn where the click landed.

    viewer_session.py --view stepscope-view --cli stepscope --trace T [--trace T2]
                      [--expect-lane REGEX]... [--expect-counter NAME=REGEX]... [--out DIR] [--docs DIR]

--docs DIR also writes the screenshots that document each feature (docs/images/viewer-*.png).
Exit 0: every step passed; 1: a step failed (its name and why, the screenshots in --out);
2: bad arguments; 77: Xvfb, xdotool or ImageMagick's import is not installed (the test is
skipped: scripts/install-deps.sh installs them). Python's standard library only.
"""
import argparse
import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77
DOCS_PICTURE_BYTES = 200 * 1024  # each documentation picture at most
SCREEN = (1600, 1000)
MARKER_COLOR = 0x7B2FBE  # viewer/timeline/marker_painter.h kMarkerColor


class StepFailed(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise StepFailed(message)


# --- the X server, the viewer and the probe ---------------------------------------------------

class Display:
    """An Xvfb server on a free display (Xvfb picks it: -displayfd)."""

    def __init__(self):
        read_fd, write_fd = os.pipe()
        self.process = subprocess.Popen(
            ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "%dx%dx24" % SCREEN, "-nolisten", "tcp"],
            pass_fds=(write_fd,), stderr=subprocess.DEVNULL)
        os.close(write_fd)
        number = b""
        with os.fdopen(read_fd, "rb") as pipe:
            while not number.endswith(b"\n"):
                chunk = pipe.read(1)
                if not chunk:
                    raise StepFailed("Xvfb exited before it opened a display")
                number += chunk
        self.name = ":" + number.decode().strip()

    def close(self):
        self.process.terminate()
        self.process.wait(timeout=10)


class Viewer:
    """stepscope-view on one trace, with the session probe."""

    def __init__(self, exe, trace, display, workdir):
        self.probe_path = os.path.join(workdir, "probe.json")
        env = dict(os.environ, DISPLAY=display.name, STEPSCOPE_VIEW_PROBE=self.probe_path,
                   QT_QPA_PLATFORM="xcb", XDG_CONFIG_HOME=os.path.join(workdir, "config"))
        env.pop("QT_QPA_PLATFORMTHEME", None)  # Qt's own file dialog, the same on every machine
        env.pop("WAYLAND_DISPLAY", None)
        self.display = display
        self.log = open(os.path.join(workdir, "viewer.log"), "w")
        self.process = subprocess.Popen([exe, trace], env=env, stdout=self.log, stderr=subprocess.STDOUT)
        # The viewer describes itself once the probe is installed; a signal before that would end it.
        deadline = time.time() + 30
        while not os.path.exists(self.probe_path):
            expect(self.process.poll() is None, "stepscope-view exited (status %s)" % self.process.returncode)
            expect(time.time() < deadline, "stepscope-view did not start its session probe in 30 s")
            time.sleep(0.05)

    def probe(self, timeout=10.0):
        """What the window shows now (session_probe.cc)."""
        if os.path.exists(self.probe_path):
            os.remove(self.probe_path)
        deadline = time.time() + timeout
        self.process.send_signal(signal.SIGUSR1)
        while time.time() < deadline:
            expect(self.process.poll() is None, "stepscope-view exited (status %s)" % self.process.returncode)
            if os.path.exists(self.probe_path):
                with open(self.probe_path) as f:
                    return json.load(f)
            time.sleep(0.03)
        raise StepFailed("stepscope-view did not describe its window within %.0f s" % timeout)

    def wait_for(self, what, condition, timeout=15.0):
        """Probes until `condition(state)` holds; the last state."""
        deadline = time.time() + timeout
        while True:
            state = self.probe()
            if condition(state):
                return state
            if time.time() > deadline:
                raise StepFailed("timed out waiting for %s" % what)
            time.sleep(0.1)

    def close(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


# --- the person's hands: xdotool -------------------------------------------------------------

class Hands:
    def __init__(self, display):
        self.env = dict(os.environ, DISPLAY=display.name)

    def xdotool(self, *args):
        subprocess.run(["xdotool"] + [str(a) for a in args], env=self.env, check=True, timeout=30)
        time.sleep(0.05)  # the viewer's turn: the probe waits for the expected state anyway

    def move(self, x, y):
        self.xdotool("mousemove", int(x), int(y))

    def click(self, x, y, button=1):
        # Arrive, then click: a menu item takes a click only once the pointer has entered it.
        self.move(x, y)
        time.sleep(0.1)
        self.xdotool("click", button)

    def click_rect(self, rect, modifier=None):
        if modifier:
            self.xdotool("keydown", modifier)
        self.click(rect["x"] + rect["w"] // 2, rect["y"] + rect["h"] // 2)
        if modifier:
            self.xdotool("keyup", modifier)

    def key(self, *keys):
        self.xdotool("key", "--delay", 60, *keys)

    def type(self, text):
        self.xdotool("type", "--delay", 40, text)

    def drag(self, x0, y0, x1, y1, modifier=None):
        if modifier:
            self.xdotool("keydown", modifier)
        self.xdotool("mousemove", int(x0), int(y0), "mousedown", 1)
        for i in range(1, 9):  # a hand moves in steps
            self.xdotool("mousemove", int(x0 + (x1 - x0) * i / 8), int(y0 + (y1 - y0) * i / 8))
        self.xdotool("mouseup", 1)
        if modifier:
            self.xdotool("keyup", modifier)

    def wheel(self, x, y, up, modifier=None, clicks=1):
        self.move(x, y)
        if modifier:
            self.xdotool("keydown", modifier)
        self.xdotool("click", "--repeat", clicks, "--delay", 80, 4 if up else 5)
        if modifier:
            self.xdotool("keyup", modifier)


# --- screenshots and what is checked in them -------------------------------------------------

class Shot:
    """A screenshot of the screen (ImageMagick's import, as PPM) with pixel access."""

    def __init__(self, display, path):
        subprocess.run(["import", "-display", display.name, "-window", "root", "-depth", "8", "ppm:" + path],
                       check=True)
        with open(path, "rb") as f:
            data = f.read()
        match = re.match(rb"P6\s+(\d+)\s+(\d+)\s+(\d+)\s", data)
        expect(match is not None, "%s: not a binary PPM" % path)
        self.width, self.height = int(match.group(1)), int(match.group(2))
        self.pixels = data[match.end():]
        self.path = path

    def pixel(self, x, y):
        i = 3 * (y * self.width + x)
        return self.pixels[i] << 16 | self.pixels[i + 1] << 8 | self.pixels[i + 2]

    def region(self, rect, inset=0):
        """The pixels of a rectangle (screen coordinates), clipped to the screen."""
        x0, y0 = max(0, rect["x"] + inset), max(0, rect["y"] + inset)
        x1 = min(self.width, rect["x"] + rect["w"] - inset)
        y1 = min(self.height, rect["y"] + rect["h"] - inset)
        return [self.pixel(x, y) for y in range(y0, y1) for x in range(x0, x1)]


def distance(a, b):
    return sum(abs(((a >> shift) & 255) - ((b >> shift) & 255)) for shift in (16, 8, 0))


def ink(pixels, background):
    """Pixels that stand out from the background: text, black or white or coloured, in either
    theme."""
    return sum(1 for p in pixels if distance(p, background) > 90)


def check_not_blank(shot, rect, what, max_share=0.97):
    counts = collections.Counter(shot.region(rect))
    expect(counts, "%s: nothing on screen" % what)
    commonest, count = counts.most_common(1)[0]
    share = count / sum(counts.values())
    expect(len(counts) >= 8 and share < max_share,
           "%s is blank: %d colours, #%06x covers %.0f %%" % (what, len(counts), commonest, 100 * share))


def check_timeline(shot, state, expect_lanes=()):
    """The timeline as the viewer says it drew it: lanes labelled, slices in their colours,
    names inside the wide slices."""
    timeline = state["timeline"]
    check_not_blank(shot, timeline, "the timeline")
    rows = [r for r in timeline["rows"] if r["labelled"]]
    expect(rows, "no lane on screen")
    unlabelled = []
    for r in rows:
        pixels = shot.region(r, inset=3)
        if ink(pixels, collections.Counter(pixels).most_common(1)[0][0]) < 4:
            unlabelled.append(r["track"])
    expect(not unlabelled, "lanes without a label on screen: %s" % unlabelled[:5])
    for pattern in expect_lanes:
        expect(any(re.search(pattern, r["track"]) for r in timeline["rows"]),
               "no lane matching '%s' on screen (lanes: %s)" % (pattern, [r["track"] for r in rows]))
    checked, missing, labelled, unnamed = 0, [], 0, []
    outlined = set(timeline["path"])
    tinted = range_px(timeline)
    searched = state["search"]["text"].lower()  # matches are marked in a colour of their own
    for s in timeline["slices"]:
        if s["w"] < 3 or s["h"] < 3 or (s["index"] in outlined and s["w"] < 8):
            continue
        if tinted and s["x"] < tinted[1] and s["x"] + s["w"] > tinted[0]:
            continue  # under the selected range's translucent band
        if searched and searched in s["name"].lower():
            continue
        pixels = shot.region(s)
        checked += 1
        if s["color"] not in pixels:
            missing.append(s)
        if s["w"] >= 80:  # wide enough for a name: text pixels other than the fill
            labelled += 1
            if ink(pixels, s["color"]) < 6:
                unnamed.append(s["name"])
    expect(checked >= 5, "only %d slices wide enough to check on screen" % checked)
    expect(len(missing) <= checked // 50,
           "%d of %d slices not drawn in their colour; first: %s" % (len(missing), checked, missing[:1]))
    expect(len(unnamed) <= labelled // 10, "%d of %d wide slices show no name: %s" % (len(unnamed), labelled, unnamed[:3]))
    return "%d lanes labelled, %d slices in their colours, %d names" % (len(rows), checked, labelled - len(unnamed))


def range_px(timeline):
    """The selected time range as screen x (begin, end), or None."""
    if "range" not in timeline:
        return None
    per_ns = timeline["time_width"] / (timeline["end_ns"] - timeline["begin_ns"])
    return tuple(timeline["time_left"] + (t - timeline["begin_ns"]) * per_ns for t in timeline["range"])


def pane(state, title):
    return next(d for d in state["panes"]["docks"] if d["title"] == title)


def check_front(state, title):
    """`title` is in front and none of the panes behind the other tabs of its group is."""
    group = pane(state, title).get("group")
    if group is None:
        return
    front = [d["title"] for d in state["panes"]["docks"] if d.get("group") == group and d["front"]]
    expect(front == [title], "of the tabs of %s's group, %s say they are in front" % (title, front))


def window_span(state):
    t = state["timeline"]
    return t["end_ns"] - t["begin_ns"]


# --- the session: one function a step --------------------------------------------------------

class Session:
    def __init__(self, args, trace, display, workdir, tag):
        self.args, self.trace, self.display, self.workdir, self.tag = args, trace, display, workdir, tag
        self.hands = Hands(display)
        self.viewer = None
        self.state = None
        self.shots = 0
        self.documented = trace == args.trace[0]  # --docs: the first trace's session

    def shot(self, name, docs_name=None, park=True):
        """A screenshot of the current state, the pointer parked where it shows no tooltip (not
        with a menu open: leaving it would close its submenu)."""
        window = self.state["window"]
        if park:
            self.hands.move(window["x"] + window["w"] - 5, window["y"] + window["h"] - 5)
        time.sleep(0.3)
        self.state = self.viewer.probe()
        self.shots += 1
        path = os.path.join(self.args.out, "%s-%02d-%s.ppm" % (self.tag, self.shots, name))
        shot = Shot(self.display, path)
        if self.args.docs and docs_name and self.documented:
            crop = "%dx%d+%d+%d" % (window["w"], window["h"], window["x"], window["y"])
            picture = os.path.join(self.args.docs, "viewer-%s.png" % docs_name)
            for colours in (256, 64):  # fewer where a translucent panel makes 256 too big
                subprocess.run(["import", "-display", self.display.name, "-window", "root", "-crop", crop, "+repage",
                                "-colors", str(colours), "-strip", "PNG8:" + picture], check=True)
                if os.path.getsize(picture) <= DOCS_PICTURE_BYTES:
                    break
        return shot

    def timeline_middle(self):
        t = self.state["timeline"]
        rows = [r for r in t["rows"] if not r["header"]]
        y = rows[len(rows) // 2]["y"] + 9 if rows else t["y"] + t["h"] // 2
        return t["time_left"] + t["time_width"] // 2, y

    def open_trace(self):
        self.viewer = Viewer(self.args.view, self.trace, self.display, self.workdir)
        self.state = self.viewer.wait_for("the trace to open and its analyses to finish",
                                          lambda s: s.get("documents") == 1 and s.get("analysed"), timeout=60)
        expect(not self.state["errors"], "errors: %s" % self.state["errors"])
        window = self.state["window"]
        subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--pid", str(self.viewer.process.pid)],
                       env=self.hands.env, check=True, stdout=subprocess.DEVNULL, timeout=30)
        self.hands.click(*self.timeline_middle())  # the timeline takes the keyboard, as a first click does
        self.state = self.viewer.wait_for("the timeline to have the keyboard", lambda s: s["focus_in_timeline"])
        shot = self.shot("open", docs_name="timeline")
        check_not_blank(shot, window, "the window")
        return check_timeline(shot, self.state, self.args.expect_lane)

    def zoom_with_keys(self):
        before = window_span(self.state)
        self.hands.move(*self.timeline_middle())
        self.hands.key("w", "w", "w", "w")
        self.state = self.viewer.wait_for("W to zoom in", lambda s: window_span(s) < before * 0.8)
        zoomed = window_span(self.state)
        self.hands.key("s")
        self.state = self.viewer.wait_for("S to zoom out", lambda s: window_span(s) > zoomed * 1.05)
        self.hands.key("w")
        self.state = self.viewer.wait_for("W to zoom in again", lambda s: window_span(s) < before * 0.8)
        check_timeline(self.shot("zoom-keys", docs_name="zoomed"), self.state)
        return "visible window %.3f ms -> %.3f ms" % (before / 1e6, window_span(self.state) / 1e6)

    def zoom_with_ctrl_wheel(self):
        before = window_span(self.state)
        x, y = self.timeline_middle()
        self.hands.wheel(x, y, up=True, modifier="ctrl", clicks=3)
        self.state = self.viewer.wait_for("Ctrl+wheel to zoom in", lambda s: window_span(s) < before * 0.95)
        zoomed = window_span(self.state)
        self.hands.wheel(x, y, up=False, modifier="ctrl", clicks=1)
        self.state = self.viewer.wait_for("Ctrl+wheel to zoom out", lambda s: window_span(s) > zoomed * 1.02)
        check_timeline(self.shot("zoom-wheel"), self.state)
        return "visible window %.3f ms -> %.3f ms -> %.3f ms" % (before / 1e6, zoomed / 1e6, window_span(self.state) / 1e6)

    def pan_with_keys(self):
        begin = self.state["timeline"]["begin_ns"]
        self.hands.move(*self.timeline_middle())
        self.hands.key("d", "d")
        self.state = self.viewer.wait_for("D to pan right", lambda s: s["timeline"]["begin_ns"] > begin)
        moved = self.state["timeline"]["begin_ns"]
        self.hands.key("a")
        self.state = self.viewer.wait_for("A to pan left", lambda s: s["timeline"]["begin_ns"] < moved)
        check_timeline(self.shot("pan-keys"), self.state)
        return "window start +%.3f ms, then back to +%.3f ms" % ((moved - begin) / 1e6,
                                                                  (self.state["timeline"]["begin_ns"] - begin) / 1e6)

    def pan_by_drag(self):
        begin = self.state["timeline"]["begin_ns"]
        x, y = self.timeline_middle()
        self.hands.drag(x, y, x - 300, y)
        self.state = self.viewer.wait_for("a drag to the left to pan right", lambda s: s["timeline"]["begin_ns"] > begin)
        check_timeline(self.shot("pan-drag"), self.state)
        return "window start +%.3f ms" % ((self.state["timeline"]["begin_ns"] - begin) / 1e6)

    def click_slice(self):
        before_index = (self.state["timeline"].get("selected") or {}).get("index")
        candidates = [s for s in self.state["timeline"]["slices"] if s["w"] >= 12 and s["index"] != before_index]
        expect(candidates, "no slice wide enough to click on screen")
        target = max(candidates, key=lambda s: s["w"])
        before = self.shot("before-click")
        self.hands.click_rect(target)
        self.state = self.viewer.wait_for("the click to select '%s'" % target["name"],
                                          lambda s: (s["timeline"].get("selected") or {}).get("index") == target["index"])
        expect("Details" in self.state["panes"]["front"],
               "the Details pane is not in front after the click (%s are)" % self.state["panes"]["front"])
        after = self.shot("click", docs_name="selected")
        # The selection is drawn: the slice's outline changed on screen.
        outline = dict(target, x=target["x"] - 2, y=target["y"] - 2, w=target["w"] + 4, h=target["h"] + 4)
        expect(before.region(outline) != after.region(outline), "the selection of '%s' is not drawn" % target["name"])
        check_not_blank(after, pane(self.state, "Details")["page"], "the Details pane")
        check_timeline(after, self.state)
        return "selected '%s' (slice %d)" % (target["name"], target["index"])

    def search(self):
        name = self.state["timeline"]["selected"]["name"]
        word = max(re.findall(r"[A-Za-z][A-Za-z0-9_]{2,}", name) or [name], key=len)
        self.hands.key("ctrl+f")
        self.state = self.viewer.wait_for("Ctrl+F to focus the search field", lambda s: s["search"]["focused"])
        self.hands.type(word)
        self.state = self.viewer.wait_for("the match count", lambda s: s["search"]["text"] == word and
                                          re.search(r"\d", s["search"]["status"]))
        self.hands.key("Return")
        self.state = self.viewer.wait_for("Enter to jump to a match and hand the keyboard to the timeline",
                                          lambda s: re.search(r"\b1 of \d+", s["search"]["status"]) and
                                          s["timeline"].get("selected") is not None and s["focus_in_timeline"])
        self.hands.key("F3")
        self.state = self.viewer.wait_for("F3 to go to the next match",
                                          lambda s: re.search(r"\b2 of \d+", s["search"]["status"]))
        check_timeline(self.shot("search", docs_name="search"), self.state)
        return "'%s': %s" % (word, self.state["search"]["status"])

    def back_to_timeline(self):
        # Esc in the search field gives the keyboard back to the timeline: 0 then fits everything
        # instead of being typed into the field.
        text = self.state["search"]["text"]
        self.hands.key("ctrl+f")
        self.state = self.viewer.wait_for("Ctrl+F to focus the search field again", lambda s: s["search"]["focused"])
        self.hands.key("Escape")
        self.state = self.viewer.wait_for("Esc to give the timeline the keyboard", lambda s: s["focus_in_timeline"])
        self.hands.key("0")
        t = self.state["timeline"]
        self.state = self.viewer.wait_for(
            "0 to fit everything", lambda s: s["timeline"]["begin_ns"] <= s["timeline"]["limit_begin_ns"] and
            s["timeline"]["end_ns"] >= s["timeline"]["limit_end_ns"])
        expect(self.state["search"]["text"] == text, "the key went to the search field: '%s'" % self.state["search"]["text"])
        check_timeline(self.shot("fit-all"), self.state)
        return "fitted %.3f ms -> %.3f ms" % ((t["end_ns"] - t["begin_ns"]) / 1e6, window_span(self.state) / 1e6)

    def select_range(self):
        t = self.state["timeline"]
        x0 = t["time_left"] + t["time_width"] // 4
        y = t["y"] + t["ruler_height"] // 2
        self.hands.drag(x0, y, x0 + t["time_width"] // 3, y)
        self.state = self.viewer.wait_for("a drag on the ruler to select a range",
                                          lambda s: s["timeline"].get("range") is not None)
        begin, end = self.state["timeline"]["range"]
        expect(end > begin, "empty range %s" % self.state["timeline"]["range"])
        check_timeline(self.shot("range"), self.state)
        return "range of %.3f ms" % ((end - begin) / 1e6)

    def open_each_pane(self):
        opened = []
        for dock in self.state["panes"]["docks"]:
            title = dock["title"]
            if "tab" in dock:  # behind a neighbour's tab
                self.hands.click_rect(dock["tab"])
            elif dock["closed"]:
                self.choose_menu("View", "Panes", title)
            self.state = self.viewer.wait_for("the %s pane to come to the front" % title,
                                              lambda s: title in s["panes"]["front"])
            check_front(self.state, title)
            docs_name = "pane-" + re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
            shot = self.shot(docs_name, docs_name=None if title in UNDOCUMENTED_PANES else docs_name)
            # An empty pane says what would fill it: a line of text on a plain page.
            check_not_blank(shot, pane(self.state, title)["page"], "the %s pane" % title, max_share=0.998)
            opened.append(title)
        check_timeline(shot, self.state)
        return ", ".join(opened)

    def bring_pane(self, title):
        """Brings a pane to the front: its tab, or View > Panes when it is closed."""
        dock = pane(self.state, title)
        if "tab" in dock:
            self.hands.click_rect(dock["tab"])
        else:
            self.choose_menu("View", "Panes", title)
        self.state = self.viewer.wait_for("the %s pane to come to the front" % title,
                                          lambda s: title in s["panes"]["front"])
        check_front(self.state, title)

    def take_keyboard(self):
        """A click on the timeline gives it the keyboard again (after typing into a pane)."""
        self.hands.click(*self.timeline_middle())
        self.state = self.viewer.wait_for("the timeline to have the keyboard", lambda s: s["focus_in_timeline"])

    def drop_marker(self):
        # With nothing selected (Esc), M drops a marker at the pointer: drawn as a line across
        # the rows, listed in the Markers pane.
        self.take_keyboard()
        self.hands.key("Escape")
        self.state = self.viewer.wait_for("Esc to clear the selection", lambda s: s["timeline"].get("selected") is None)
        before = {m["label"] for m in self.state["timeline"]["markers"]}
        self.hands.move(*self.timeline_middle())
        self.hands.key("m")
        self.state = self.viewer.wait_for("M to drop a marker", lambda s: len(s["timeline"]["markers"]) > len(before))
        marker = next(m for m in self.state["timeline"]["markers"] if m["label"] not in before)
        self.bring_pane("Markers")
        self.state = self.viewer.wait_for("the Markers pane to list '%s'" % marker["label"], lambda s: any(
            text.startswith(marker["label"] + " ") for text in s["markers_listed"]))
        shot = self.shot("marker")
        t = self.state["timeline"]
        expect(t["time_left"] <= marker["x"] < t["time_left"] + t["time_width"], "the marker is off screen: %s" % marker)
        column = shot.region({"x": marker["x"], "y": t["y"] + t["ruler_height"], "w": 1,
                              "h": t["h"] - t["ruler_height"]})
        drawn = sum(1 for p in column if distance(p, MARKER_COLOR) < 40)
        expect(drawn > len(column) // 2, "the marker's line covers %d of %d pixels of its column" % (drawn, len(column)))
        check_not_blank(shot, pane(self.state, "Markers")["page"], "the Markers pane")
        return "'%s' drawn down %d of %d pixels, listed: %s" % (marker["label"], drawn, len(column),
                                                                 self.state["markers_listed"])

    def pick_two_slices(self):
        # Ctrl+click two slices that do not overlap in time: the Call tree pane shows both as
        # top-level rows.
        half = self.state["timeline"]["time_width"] // 2
        slices = sorted((s for s in self.state["timeline"]["slices"] if s["w"] >= 12 and s["h"] >= 8),
                        key=lambda s: -s["w"])
        # The first not the whole run's span (room beside it), the second the widest beside it.
        first = next((s for s in slices if s["w"] <= half), None)
        expect(first is not None, "no slice wide enough to click on screen")
        beside = [s for s in slices if s["x"] >= first["x"] + first["w"] or s["x"] + s["w"] <= first["x"]]
        second = next((s for s in beside if s["name"] != first["name"]), beside[0] if beside else None)
        expect(second is not None, "no second slice beside '%s' to click" % first["name"])
        for target in (first, second):
            self.hands.click_rect(target, modifier="ctrl")
        self.state = self.viewer.wait_for("Ctrl+clicks to pick two slices", lambda s: set(
            s["timeline"]["picked"]) == {first["index"], second["index"]})
        time.sleep(1.0)  # the Range pane takes the front with the selection's statistics
        self.state = self.viewer.probe()
        self.bring_pane("Call tree")
        names = {first["name"], second["name"]}
        self.state = self.viewer.wait_for("the call tree of the two slices", lambda s: not s["call_tree"]["pending"] and
                                          names <= set(s["call_tree"].get("top", [])))
        shot = self.shot("call-tree-picked")
        check_not_blank(shot, pane(self.state, "Call tree")["page"], "the Call tree pane")
        tree = self.state["call_tree"]
        expect(len(tree["top"]) == len(names), "the call tree has %d top-level rows for %s: %s" % (
            len(tree["top"]), sorted(names), tree["top"]))
        return "'%s' and '%s': %d slices counted (%s)" % (first["name"], second["name"], tree["slices"], tree["caption"])

    def filter_tracks(self):
        # The Tracks pane's filter keeps the matching lanes (and what is above them) on the
        # timeline; cleared, every lane is back.
        lanes = [r["track"] for r in self.state["timeline"]["rows"] if not r["header"] and not r["counter"]]
        expect(lanes, "no lane on screen")
        name = collections.Counter(lanes).most_common()[-1][0]  # the last of the rarest: one lane
        self.bring_pane("Tracks")
        self.hands.click_rect(self.state["tracks_filter"])
        self.hands.type(name)

        # A name matches as text or as a regular expression, in names and paths (a lane named
        # like its neighbours keeps them too): the lane stays, some lane on screen goes.
        def filtered(s):
            kept = {r["track"] for r in s["timeline"]["rows"] if not r["header"] and not r["counter"]}
            return s["tracks_filter"]["text"] == name and name in kept and not set(lanes) <= kept
        expect(len(set(lanes)) >= 2, "one lane on screen: nothing to filter out")
        self.state = self.viewer.wait_for("the filter to keep lane '%s' and hide others" % name, filtered)
        shot = self.shot("tracks-filter")
        check_not_blank(shot, self.state["timeline"], "the filtered timeline")
        kept = len(self.state["timeline"]["rows"])
        self.hands.key("ctrl+a", "BackSpace")
        self.state = self.viewer.wait_for("the cleared filter to bring every lane back", lambda s: len(
            {r["track"] for r in s["timeline"]["rows"] if not r["header"] and not r["counter"]}) > 1)
        self.take_keyboard()
        return "'%s': %d rows on screen, then %d again" % (name, kept, len(self.state["timeline"]["rows"]))

    def counter_tracks(self):
        # The counters drawn under their device: each chart on screen has ink in its time area,
        # and the counters this trace must have are there.
        rows = [r for r in self.state["timeline"]["rows"] if r.get("counter_name")]
        expected = [rx for key, rx in self.args.expect_counter if key in os.path.basename(self.trace)]
        expect(rows or not expected, "no counter track on screen")
        for pattern in expected:
            expect(any(re.search(pattern, r["counter_name"]) for r in rows),
                   "no counter matching '%s' on screen (counters: %s)" % (pattern, [r["counter_name"] for r in rows]))
        shot = self.shot("counters")
        drawn = []
        for r in rows:
            pixels = shot.region(r["area"], inset=1)
            background = collections.Counter(pixels).most_common(1)[0][0]
            share = sum(1 for p in pixels if distance(p, background) > 30) / max(1, len(pixels))
            expect(share > 0.01, "the counter '%s' is not drawn: %.1f %% of its area" % (r["counter_name"], 100 * share))
            drawn.append("%s %.0f %%" % (r["counter_name"], 100 * share))
        return "drawn (share of the area inked): %s" % (", ".join(drawn) or "none on this trace")

    def help_overlay(self):
        self.hands.move(*self.timeline_middle())
        self.hands.key("question")
        self.state = self.viewer.wait_for("? to show the keys over the timeline", lambda s: s["timeline"]["help_shown"])
        check_not_blank(self.shot("help", docs_name="help"), self.state["timeline"], "the key bindings")
        self.hands.key("Escape")
        self.state = self.viewer.wait_for("Esc to hide them", lambda s: not s["timeline"]["help_shown"])
        return "shown and hidden"

    def dark_theme(self):
        light = self.state["window_lightness"]
        self.choose_menu("View", "Theme", "Dark")
        self.state = self.viewer.wait_for("the dark theme", lambda s: s["window_lightness"] < 100)
        dark = self.state["window_lightness"]
        outcome = check_timeline(self.shot("dark", docs_name="dark"), self.state)
        self.choose_menu("View", "Theme", "Light")
        self.state = self.viewer.wait_for("the light theme again", lambda s: s["window_lightness"] > 150)
        return "window lightness %d -> %d -> %d; %s" % (light, dark, self.state["window_lightness"], outcome)

    def choose_menu(self, *path, before_last=None):
        """Clicks through the menu bar and its menus, each item found by its text; `before_last`
        runs with the last menu open."""
        bar = next((m for m in self.state["menubar"] if m["text"] == path[0]), None)
        expect(bar is not None, "no menu '%s' in %s" % (path[0], [m["text"] for m in self.state["menubar"]]))
        self.hands.click_rect(bar)
        for text in path[1:]:
            self.state = self.viewer.wait_for("the menu with '%s'" % text, lambda s: any(
                i["text"] == text for i in s.get("menu", {}).get("items", [])), timeout=5)
            item = next(i for i in self.state["menu"]["items"] if i["text"] == text)
            if text == path[-1] and before_last:
                before_last()
            self.hands.click_rect(item)

    def export_chrome_json(self):
        return self.export("Chrome JSON for Perfetto...", "export.json.gz",
                           before_last=lambda: self.shot("export-menu", docs_name="export-menu", park=False))

    def export_perfetto_proto(self):
        return self.export("Perfetto protobuf (.pftrace)...", "export.pftrace")

    def export(self, item, file_name, before_last=None):
        path = os.path.join(self.workdir, "%s-%s" % (self.tag, file_name))
        self.choose_menu("File", "Export", item, before_last=before_last)
        self.state = self.viewer.wait_for("the save dialog", lambda s: "dialog" in s, timeout=10)
        self.hands.type(path)
        self.hands.key("Return")
        # Written to a temporary name and renamed: once the file is there, it is whole.
        self.state = self.viewer.wait_for("the export to be written", lambda s: "dialog" not in s and os.path.exists(path))
        expect(not self.state["errors"], "export failed: %s" % self.state["errors"])
        expect(os.path.getsize(path) > 0, "%s is empty" % path)
        spans = []
        for trace in (self.trace, path):
            summary = subprocess.run([self.args.cli, "summary", trace], capture_output=True, text=True)
            expect(summary.returncode == 0, "stepscope summary %s: exit %d: %s" % (trace, summary.returncode, summary.stderr))
            span = re.search(r"^span\s+(\S+ \S+)", summary.stdout, re.M)
            expect(span is not None, "stepscope summary %s prints no span" % trace)
            spans.append(span.group(1))
        expect(spans[0] == spans[1], "the export spans %s, the trace %s" % (spans[1], spans[0]))
        return "wrote %s (%d bytes); stepscope summary reads it back: span %s, as the trace's" % (
            os.path.basename(path), os.path.getsize(path), spans[1])

    def close(self):
        if self.viewer:
            self.viewer.close()


# Panes that show only what would fill them in this session (stragglers need a merge of ranks,
# docs/analysis.md; markers are placed with M).
UNDOCUMENTED_PANES = {"Stragglers", "Markers"}

# The story, in order. A new step is a Session method and one line here.
STEPS = [
    ("open the trace", Session.open_trace),
    ("zoom with W and S", Session.zoom_with_keys),
    ("zoom with Ctrl+wheel", Session.zoom_with_ctrl_wheel),
    ("pan with A and D", Session.pan_with_keys),
    ("pan by dragging", Session.pan_by_drag),
    ("click a slice", Session.click_slice),
    ("search and go to the matches", Session.search),
    ("back to the timeline", Session.back_to_timeline),
    ("select a time range on the ruler", Session.select_range),
    ("open each pane", Session.open_each_pane),
    ("drop a marker (M)", Session.drop_marker),
    ("Ctrl+click two slices: call tree", Session.pick_two_slices),
    ("filter the tracks", Session.filter_tracks),
    ("counter tracks drawn", Session.counter_tracks),
    ("the keys over the timeline (?)", Session.help_overlay),
    ("the dark theme", Session.dark_theme),
    ("export Chrome JSON", Session.export_chrome_json),
    ("export Perfetto protobuf", Session.export_perfetto_proto),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--view", required=True, help="the stepscope-view executable")
    parser.add_argument("--cli", required=True, help="the stepscope executable (reads the export back)")
    parser.add_argument("--trace", action="append", required=True, help="a trace; one session each")
    parser.add_argument("--expect-lane", action="append", default=[],
                        help="a regular expression some lane on the first screen must match (for every trace)")
    parser.add_argument("--expect-counter", action="append", default=[], type=lambda v: tuple(v.split("=", 1)),
                        help="NAME=REGEX: a trace whose file name holds NAME shows a counter track matching REGEX")
    parser.add_argument("--out", help="where screenshots and logs go (default: a temporary directory)")
    parser.add_argument("--docs", help="also write the documentation screenshots of the first trace's session here "
                        "(viewer-*.png)")
    args = parser.parse_args()
    missing = [tool for tool in ("Xvfb", "xdotool", "import") if shutil.which(tool) is None]
    if missing:
        print("SKIPPED: %s not installed (scripts/install-deps.sh installs xvfb, xdotool, imagemagick)"
              % ", ".join(missing))
        return SKIP
    args.out = args.out or tempfile.mkdtemp(prefix="viewer-session-")
    os.makedirs(args.out, exist_ok=True)
    if args.docs:
        os.makedirs(args.docs, exist_ok=True)
    display = Display()
    failed = 0
    try:
        for trace in args.trace:
            tag = re.sub(r"[^a-z0-9]+", "-", os.path.basename(trace).lower().split(".")[0]).strip("-")
            workdir = os.path.join(args.out, tag)
            shutil.rmtree(workdir, ignore_errors=True)  # a stale probe file would be taken for the viewer's
            os.makedirs(workdir)
            print("session on %s (display %s, screenshots in %s)" % (trace, display.name, args.out), flush=True)
            # The path as given: the status bar shows it (in the documentation's pictures too).
            session = Session(args, trace, display, workdir, tag)
            try:
                for title, step in STEPS:
                    started = time.time()
                    outcome = step(session)
                    print("  %-34s %5.1f s  %s" % (title, time.time() - started, outcome), flush=True)
            except (StepFailed, subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
                screen = os.path.join(args.out, "%s-failed.png" % tag)
                subprocess.run(["import", "-display", display.name, "-window", "root", screen], check=False)
                print("  FAILED at '%s': %s (log: %s, screen: %s)" % (title, error, os.path.join(workdir, "viewer.log"),
                                                                       screen), flush=True)
                failed += 1
            finally:
                session.close()
    finally:
        display.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
