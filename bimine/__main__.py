"""``python -m bimine`` is the ``bimine`` command."""

from bimine.cli.main import main

main()
