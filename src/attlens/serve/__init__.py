"""``attlens mcp``: a Model Context Protocol server over stdio (docs/agents.md).

``roots`` confines every path a tool is given; ``cache`` keeps analyzed
captures in memory between calls; ``tools`` answers each question with the
object the CLI's ``--json`` prints (through :mod:`attlens.api` and ``to_dict()``);
``server`` registers the tools with the official ``mcp`` SDK (the optional
extra ``attlens[mcp]``), which is imported only here.
"""
