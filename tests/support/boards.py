"""Generated boards made once per test process and copied after.

A board is a pure function of its seed, its size and whether it has pictures (its dates come
from fixed ranges, never the clock: :mod:`mirror.localsite.board.generate`), yet some 200 tests
each generated theirs again: 1-2 s apiece for the 260 images of the ``site`` fixture, minutes
of a whole run. :func:`copy_generated_boards` makes :meth:`BoardEditor.generate` write each
distinct board once, into a folder of the test run, and hand every later caller a copy of that
file in a temporary folder of its own, exactly as a fresh generation would be (the editor's
edits never reach the template).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

from mirror.localsite.board.editor import BoardEditor

_generate = BoardEditor.generate.__func__  # the real one, which writes the board
_templates: dict[tuple[int, int, bool], Path] = {}


def copy_generated_boards() -> None:
    """From now on in this process, :meth:`BoardEditor.generate` copies a board made once."""
    boards = Path(tempfile.mkdtemp(prefix="mirror-test-boards-"))
    atexit.register(shutil.rmtree, boards, ignore_errors=True)

    def generate(cls, seed: int = 1, images: int = 200, *, with_pictures: bool = False,
                 folder: str | Path | None = None, apart: bool = False) -> BoardEditor:
        key = (seed, images, with_pictures)
        if key not in _templates:
            made = _generate(cls, seed, images, with_pictures=with_pictures, folder=boards)
            made.close()  # its last connection gone: the WAL is folded into the one file copied
            _templates[key] = made.path.rename(boards / f"{seed}-{images}-{with_pictures}.db")
        template = _templates[key]
        return cls._made(folder, f"board-{seed}-{images}.db", lambda path: shutil.copyfile(template, path))

    BoardEditor.generate = classmethod(generate)
