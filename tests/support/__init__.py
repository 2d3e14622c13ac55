"""What the tests share (``tests/`` is on ``sys.path``: ``from support.cli import run``).

- ``paths``: the fixtures, the goldens and the real-broker corpus (``needs_corpus``).
- ``cli``: running ``klogtool`` in-process (:func:`klogtool.cli.run_captured`) or as a real
  process, reading its JSON Lines, and ``fixtures/generate.py``'s builders (``generator()``).
- ``processes``: the one crash runner (a forked CLI killed after N file operations) and a
  broker-like lock holder.
- ``records``: the one record normaliser, and the careful v2 decoder as a reference.
- ``repair``, ``rewrite``: scenarios and references of the repairing and rewriting commands.
- ``fuzz``: ``bench/fuzz.py``'s seed builders and checks, loaded once.
"""
