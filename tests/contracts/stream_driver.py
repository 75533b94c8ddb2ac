"""Stream the example of one registered file kind into a file, in a process of its own.

Run as ``python tests/contracts/stream_driver.py KIND PATH [options]`` by the
crash-safety contract suite (``test_file_kinds.py``), which kills it, limits
its file size or lets it finish.  Prints one JSON line on stdout: the
outcome (``complete``, ``write_error``), the items on disk, the file kept,
the free space said to be needed and the error's message.

Options:
  --module MOD     import MOD first (a kind registered outside particles.io)
  --resume         continue PATH
  --delay S        sleep S seconds before every item after the first
  --pause-after K  after K items, sleep 600 s (a session killed before promotion)
  --limit BYTES    file size limit of this process (RLIMIT_FSIZE, SIGXFSZ ignored)
"""

from __future__ import annotations

import argparse
import importlib
import json
import resource
import signal
import sys
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind")
    parser.add_argument("path", type=Path)
    parser.add_argument("--module")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--pause-after", type=int)
    parser.add_argument("--limit", type=int)
    args = parser.parse_args()
    if args.limit:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (args.limit, args.limit))
    if args.module:
        importlib.import_module(args.module)
    from contract_rules import session_of

    from particles.errors import OutputWriteError
    from particles.io import FILE_KINDS

    kind = FILE_KINDS[args.kind]

    def paced(items):
        for k, item in enumerate(items):
            if k and args.delay:
                time.sleep(args.delay)
            yield item
            if args.pause_after is not None and k + 1 == args.pause_after:
                time.sleep(600)

    try:
        summary = session_of(kind, resume=args.resume, pace=paced)(args.path)
        out = {"outcome": "complete", "items": summary.items}
    except OutputWriteError as exc:
        out = {"outcome": "write_error", "message": str(exc), "needed": exc.needed,
               "kept": None if exc.kept is None else str(exc.kept),
               "items": None if exc.summary is None else exc.summary.items}
    print(json.dumps(out))
    sys.stdout.flush()


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    main()
