from quantcheck.cli import main

raise SystemExit(main())
