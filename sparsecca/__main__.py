from sparsecca.cli import main

raise SystemExit(main())
