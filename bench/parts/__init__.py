"""The bench's parts, one module each: how a part runs (run, on the shared context
that run.py's setup makes), what it derives from its runs, and its table (show).  run.py
holds the table of parts: which run, in what order, under which --only name and budget,
and the order their tables print in."""
