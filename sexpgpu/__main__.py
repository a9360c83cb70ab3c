from sexpgpu.cli import main

raise SystemExit(main())
