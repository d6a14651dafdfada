"""``python -m tui.cli``: the ``sessionref`` command."""

from tui.cli import main

raise SystemExit(main())
