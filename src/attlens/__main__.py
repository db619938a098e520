try:
    from attlens.cli import main
except KeyboardInterrupt:  # Ctrl-C while Python loads attlens: no traceback
    import sys

    print("attlens: interrupted", file=sys.stderr)
    raise SystemExit(130) from None

raise SystemExit(main())
