from quantcheck.cli.main import main

raise SystemExit(main())
