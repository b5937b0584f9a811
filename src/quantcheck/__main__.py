from quantcheck.cli.main import main

if __name__ == "__main__":  # not when a spawned worker process re-imports it
    raise SystemExit(main())
