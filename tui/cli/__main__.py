"""``python -m tui.cli``: the ``sessionref`` command."""

from tui.cli.command import main

raise SystemExit(main())
