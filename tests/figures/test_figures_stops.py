"""``particles figures`` stopped for real (issue 38 item 5): a full disk is one
``Error:`` line and exit 1 (was two chained PIL tracebacks), Ctrl-C one
``Interrupted:`` line about figures (was one about trajectory frames); both
name the figures written and those not made, and leave no partial file.

The gallery is three small stand-in figures (a script directory of this
test's own, the real ``particles figures`` command and ``FigureCommand.save``
in a process of its own), so a stop lands where the test wants it.
"""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.processes

#: runs ``particles ARGS`` with the gallery replaced by the scripts in DIR.
DRIVER = textwrap.dedent("""
    import sys
    from pathlib import Path

    import particles.gallery as gallery

    root = Path(sys.argv[1])
    gallery.figures_dir = lambda: root
    gallery.FIGURES.clear()
    for name, extra in (("first", ()), ("second", (".gif",)), ("third", ())):
        gallery.FIGURES[name] = gallery.FigureEntry(name, name, extra)
    sys.argv = ["particles", *sys.argv[2:]]
    from particles_cli.__main__ import main

    main()
""")

#: a stand-in figure script; MODE: "small" picture, "big" (noise: megabytes), or
#: "slow" (writes half its GIF, says so in DIR/started, then waits).
SCRIPT = textwrap.dedent('''
    """A stand-in figure."""
    import time
    from pathlib import Path

    import numpy as np
    from matplotlib.figure import Figure

    from particles.gallery import figure_command

    MODE = "{mode}"


    def main(argv):
        args = figure_command(__doc__, __file__, argv)
        if MODE == "slow":
            args.out.with_suffix(".gif").write_bytes(b"GIF89a half a movie")
            (Path(__file__).parent / "started").touch()
            time.sleep(120)
        fig = Figure(figsize=(8, 6))
        ax = fig.add_subplot()
        if MODE == "big":
            ax.imshow(np.random.default_rng(0).random((800, 800)))
        else:
            ax.plot(range(10))
        args.save(fig)
        return 0
''')


def gallery(root: Path, second: str) -> Path:
    scripts = root / "scripts"
    scripts.mkdir()
    for name, mode in (("first", "small"), ("second", second), ("third", "small")):
        (scripts / f"{name}.py").write_text(SCRIPT.format(mode=mode))
    return scripts


def start(scripts: Path, out: Path, limit: int | None = None) -> subprocess.Popen:
    def preexec() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(scripts), "figures", "--quick", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=out.parent,
        preexec_fn=preexec if limit else None)


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def stops(stderr: str, out: Path) -> list[str]:
    """The lines on stderr but the scripts' own (the file written, its seconds)."""
    return [line for line in lines(stderr)
            if not line.startswith(str(out)) and not re.fullmatch(r"[0-9.]+ s", line)]


def test_a_full_disk_is_one_line_naming_the_figures(tmp_path):
    out = tmp_path / "out"
    proc = start(gallery(tmp_path, "big"), out, limit=150_000)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 1, stderr
    assert "Traceback" not in stderr, stderr
    assert len(stops(stderr, out)) == 1, stderr
    line = stops(stderr, out)[0]
    assert line.startswith("Error: cannot write figure second (File too large)"), line
    assert f"1 of 3 figures written to {out} (first)" in line
    assert "not made: second, third" in line and "--only second,third" in line
    assert len(lines(stdout)) == 1 and stdout.startswith(f"first: {out / 'first.png'} (")
    assert sorted(p.name for p in out.iterdir()) == ["first.png"]


def test_an_interrupt_talks_about_figures(tmp_path):
    out = tmp_path / "out"
    scripts = gallery(tmp_path, "slow")
    proc = start(scripts, out)
    try:
        deadline = time.monotonic() + 120
        while not (scripts / "started").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGINT, stderr
    assert stops(stderr, out) == [
        f"Interrupted: 1 of 3 figures written to {out} (first); not made: second, third; "
        f"make them with: particles figures --quick --only second,third --out {out}"], stderr
    assert "frame" not in stderr
    # the half-written GIF of the figure being made is gone
    assert sorted(p.name for p in out.iterdir()) == ["first.png"]
    assert os.path.getsize(out / "first.png") > 1000
