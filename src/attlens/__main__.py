from attlens.cli import main

raise SystemExit(main())
