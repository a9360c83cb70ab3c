"""`python -m sexpgpu`: the `sexpgpu` command (see cli.py)."""

from sexpgpu.cli import main

raise SystemExit(main())
